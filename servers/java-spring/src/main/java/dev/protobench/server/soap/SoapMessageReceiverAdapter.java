package dev.protobench.server.soap;

import dev.protobench.server.web.BufferedBodyRequest;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.io.OutputStream;
import java.util.Locale;
import org.springframework.util.MimeType;
import org.springframework.web.servlet.ModelAndView;
import org.springframework.ws.InvalidXmlException;
import org.springframework.ws.soap.SoapMessage;
import org.springframework.ws.transport.http.WebServiceMessageReceiverHandlerAdapter;

/**
 * Spring-WS's servlet adapter, changed in two ways:
 *
 * - Before the message factory (SAAJ) parses anything, the body is read once through
 *   {@link ElementLimit}: more than 10,000 elements, a DOCTYPE or malformed XML get a
 *   soap:Client fault there, so SAAJ never builds a DOM for them. The bytes read are handed to
 *   Spring-WS unchanged.
 * - A request whose envelope SAAJ cannot parse gets a soap:Client fault with HTTP 500, as the
 *   contract says, instead of Spring-WS's bare HTTP 400.
 *
 * A body that stops arriving (PROTOBENCH_READ_TIMEOUT) has already been answered 408 by Tomcat
 * when the read failed; nothing more is written then.
 */
public final class SoapMessageReceiverAdapter extends WebServiceMessageReceiverHandlerAdapter {

    @Override
    public ModelAndView handle(HttpServletRequest request, HttpServletResponse response, Object handler)
            throws Exception {
        if (!"POST".equals(request.getMethod())) {
            return super.handle(request, response, handler);
        }
        byte[] body;
        try {
            body = ElementLimit.readChecked(request.getInputStream(), request.getContentLengthLong(),
                    charset(request.getContentType()), ElementLimit.MAX_ELEMENTS);
        } catch (ElementLimit.Refused e) {
            // read (and discard) the rest of the body, so that the client, still sending, gets
            // to read the fault; its size is bounded by PROTOBENCH_MAX_REQUEST_BYTES already
            try {
                request.getInputStream().transferTo(OutputStream.nullOutputStream());
            } catch (IOException gone) {
                return null;
            }
            writeClientFault(response, e.getMessage());
            return null;
        } catch (IOException e) {
            // reading the body failed: Tomcat has already answered it (408 on the read timeout,
            // 400 otherwise) or the client has gone
            return null;
        }
        HttpServletRequest buffered = new BufferedBodyRequest(request, body);
        try {
            return super.handle(buffered, response, handler);
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

    private static String charset(String contentType) {
        if (contentType == null) {
            return null;
        }
        try {
            String cs = MimeType.valueOf(contentType).getParameter("charset");
            return cs == null ? null : cs.replace("\"", "");
        } catch (IllegalArgumentException e) {
            return null;
        }
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
