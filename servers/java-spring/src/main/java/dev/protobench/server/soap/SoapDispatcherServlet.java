package dev.protobench.server.soap;

import jakarta.servlet.http.HttpServletRequest;
import org.springframework.ws.transport.http.MessageDispatcherServlet;
import org.springframework.ws.wsdl.WsdlDefinition;

/**
 * Spring-WS's MessageDispatcherServlet, answering GET /soap?wsdl with the contract's WSDL
 * (Spring-WS itself only serves WSDLs at <name>.wsdl). The soap:address is rewritten to the
 * request's scheme, host and port by Spring-WS (transformWsdlLocations).
 */
public final class SoapDispatcherServlet extends MessageDispatcherServlet {

    private final WsdlDefinition wsdl;

    public SoapDispatcherServlet(WsdlDefinition wsdl) {
        this.wsdl = wsdl;
    }

    @Override
    protected WsdlDefinition getWsdlDefinition(HttpServletRequest request) {
        if ("GET".equals(request.getMethod()) && "wsdl".equalsIgnoreCase(request.getQueryString())) {
            return wsdl;
        }
        return null;
    }
}
