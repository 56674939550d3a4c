package dev.protobench.server.soap;

/** Bad input (invalid value, unknown file, unknown body element): a soap:Client fault. */
public final class SoapClientFault extends RuntimeException {
    public SoapClientFault(String message) {
        super(message, null, false, false);
    }
}
