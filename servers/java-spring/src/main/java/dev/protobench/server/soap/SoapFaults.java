package dev.protobench.server.soap;

import dev.protobench.server.RequestPolicy;
import jakarta.xml.bind.JAXBException;
import java.util.Locale;
import javax.xml.stream.XMLStreamException;
import javax.xml.transform.TransformerException;
import org.springframework.core.Ordered;
import org.springframework.oxm.XmlMappingException;
import org.springframework.ws.InvalidXmlException;
import org.springframework.ws.context.MessageContext;
import org.springframework.ws.server.EndpointExceptionResolver;
import org.springframework.ws.soap.SoapBody;
import org.springframework.ws.soap.SoapMessage;
import org.springframework.ws.soap.SoapMessageCreationException;
import org.xml.sax.SAXException;

/**
 * Maps every exception of the SOAP dispatch onto the contract's faults: soap:Server with
 * faultstring "injected failure" for an injected failure, soap:Client for bad input (malformed
 * XML, a DTD, unknown body element, invalid values, unknown file), soap:Server "internal error"
 * for anything else. Never sends exception details or stack traces.
 */
public final class SoapFaults implements EndpointExceptionResolver, Ordered {

    @Override
    public int getOrder() {
        return Ordered.HIGHEST_PRECEDENCE;
    }

    @Override
    public boolean resolveException(MessageContext messageContext, Object endpoint, Exception ex) {
        SoapBody body = ((SoapMessage) messageContext.getResponse()).getSoapBody();
        if (ex instanceof RequestPolicy.InjectedFailure) {
            body.addServerOrReceiverFault("injected failure", Locale.ENGLISH);
        } else if (ex instanceof SoapClientFault) {
            body.addClientOrSenderFault(ex.getMessage(), Locale.ENGLISH);
        } else if (isBadInput(ex)) {
            body.addClientOrSenderFault("malformed or invalid request: " + describe(ex), Locale.ENGLISH);
        } else {
            body.addServerOrReceiverFault("internal error", Locale.ENGLISH);
        }
        return true;
    }

    /** True when the exception (or a cause) comes from reading the request XML. */
    public static boolean isBadInput(Throwable ex) {
        for (Throwable t = ex; t != null; t = t.getCause()) {
            if (t instanceof InvalidXmlException || t instanceof SoapMessageCreationException
                    || t instanceof SAXException || t instanceof XMLStreamException
                    || t instanceof TransformerException || t instanceof JAXBException
                    || t instanceof XmlMappingException || t instanceof jakarta.xml.soap.SOAPException
                    || t instanceof SoapClientFault) {
                return true;
            }
            if (t.getCause() == t) {
                break;
            }
        }
        return false;
    }

    /** A short, safe description: the XML parser's or JAXB's message, never a stack trace. */
    static String describe(Throwable ex) {
        for (Throwable t = ex; t != null; t = t.getCause()) {
            if (t instanceof SAXException || t instanceof jakarta.xml.bind.UnmarshalException) {
                String m = t.getMessage();
                if (m != null && !m.isBlank()) {
                    return m.length() > 200 ? m.substring(0, 200) : m;
                }
            }
            if (t.getCause() == t) {
                break;
            }
        }
        return "could not read the request";
    }
}
