package dev.protobench.server.web;

import java.nio.charset.StandardCharsets;
import org.apache.coyote.Adapter;
import org.apache.coyote.Processor;
import org.apache.coyote.Request;
import org.apache.coyote.UpgradeProtocol;
import org.apache.coyote.http11.upgrade.InternalHttpUpgradeHandler;
import org.apache.tomcat.util.net.SocketWrapperBase;

/**
 * Makes a TLS connector select "http/1.1" by ALPN (the contract asks for ALPN http/1.1 on the
 * rest and soap listeners; Tomcat on its own never negotiates http/1.1 explicitly). It is not a
 * real upgrade: it returns no processor, so Tomcat serves the connection with its normal
 * HTTP/1.1 processor, and it refuses every HTTP Upgrade request.
 */
public final class Http11AlpnMarker implements UpgradeProtocol {

    private static final byte[] ID = "http/1.1".getBytes(StandardCharsets.US_ASCII);

    @Override
    public String getHttpUpgradeName(boolean isSSLEnabled) {
        return null;
    }

    @Override
    public byte[] getAlpnIdentifier() {
        return ID.clone();
    }

    @Override
    public String getAlpnName() {
        return "http/1.1";
    }

    @Override
    public Processor getProcessor(SocketWrapperBase<?> socketWrapper, Adapter adapter) {
        return null;
    }

    @Override
    public InternalHttpUpgradeHandler getInternalUpgradeHandler(SocketWrapperBase<?> socketWrapper, Adapter adapter,
            Request request) {
        return null;
    }

    @Override
    public boolean accept(Request request) {
        return false;
    }
}
