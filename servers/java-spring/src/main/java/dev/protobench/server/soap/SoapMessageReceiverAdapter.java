package dev.protobench.server.soap;

import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.util.Locale;
import org.springframework.web.servlet.ModelAndView;
import org.springframework.ws.InvalidXmlException;
import org.springframework.ws.soap.SoapMessage;
import org.springframework.ws.transport.http.WebServiceMessageReceiverHandlerAdapter;

/**
 * Spring-WS's servlet adapter, changed so that a request whose envelope cannot even be parsed
 * (malformed XML, a DOCTYPE) gets a soap:Client fault with HTTP 500, as the contract says,
 * instead of Spring-WS's bare HTTP 400.
 */
public final class SoapMessageReceiverAdapter extends WebServiceMessageReceiverHandlerAdapter {

    @Override
    public ModelAndView handle(HttpServletRequest request, HttpServletResponse response, Object handler)
            throws Exception {
        try {
            return super.handle(request, response, handler);
        } catch (Exception e) {
            if (!response.isCommitted() && SoapFaults.isBadInput(e)) {
                writeClientFault(response, "malformed request: " + SoapFaults.describe(e));
                return null;
            }
            throw e;
        }
    }

    @Override
    protected void handleInvalidXmlException(HttpServletRequest request, HttpServletResponse response,
            Object handler, InvalidXmlException ex) throws Exception {
        writeClientFault(response, "malformed request: " + SoapFaults.describe(ex));
    }

    private void writeClientFault(HttpServletResponse response, String message) throws Exception {
        response.reset();
        SoapMessage fault = (SoapMessage) getMessageFactory().createWebServiceMessage();
        fault.getSoapBody().addClientOrSenderFault(message, Locale.ENGLISH);
        response.setStatus(HttpServletResponse.SC_INTERNAL_SERVER_ERROR);
        response.setContentType("text/xml; charset=utf-8");
        fault.writeTo(response.getOutputStream());
    }
}
