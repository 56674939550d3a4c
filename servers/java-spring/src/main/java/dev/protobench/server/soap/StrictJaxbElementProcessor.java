package dev.protobench.server.soap;

import jakarta.xml.bind.JAXBContext;
import jakarta.xml.bind.JAXBException;
import jakarta.xml.bind.Unmarshaller;
import jakarta.xml.bind.ValidationEvent;
import org.springframework.ws.server.endpoint.adapter.method.jaxb.JaxbElementPayloadMethodProcessor;

/**
 * Spring-WS's JAXBElement payload processor with a strict unmarshaller: the JAXB runtime's
 * default is to ignore value errors (an int "abc" would silently become 0); here any error or
 * unexpected element aborts unmarshalling, which SoapFaults turns into a soap:Client fault.
 */
public final class StrictJaxbElementProcessor extends JaxbElementPayloadMethodProcessor {

    @Override
    protected Unmarshaller createUnmarshaller(JAXBContext jaxbContext) throws JAXBException {
        Unmarshaller u = super.createUnmarshaller(jaxbContext);
        u.setEventHandler(event -> event.getSeverity() == ValidationEvent.WARNING);
        return u;
    }
}
