package dev.protobench.server.soap;

import org.springframework.core.Ordered;
import org.springframework.ws.context.MessageContext;
import org.springframework.ws.server.EndpointInvocationChain;
import org.springframework.ws.server.EndpointMapping;

/**
 * The last endpoint mapping: a body element no @PayloadRoot method handles (or an empty body)
 * gets a soap:Client fault instead of Spring-WS's default HTTP 404.
 */
public final class UnknownOperationMapping implements EndpointMapping, Ordered {

    @Override
    public int getOrder() {
        return Ordered.LOWEST_PRECEDENCE;
    }

    @Override
    public EndpointInvocationChain getEndpoint(MessageContext messageContext) {
        throw new SoapClientFault("unknown body element: no such operation");
    }
}
