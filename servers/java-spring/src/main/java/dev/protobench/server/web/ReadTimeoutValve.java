package dev.protobench.server.web;

import jakarta.servlet.ServletException;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import org.apache.catalina.connector.Request;
import org.apache.catalina.connector.Response;
import org.apache.catalina.valves.ValveBase;
import org.apache.coyote.ActionCode;

/**
 * PROTOBENCH_READ_TIMEOUT on HTTP/1.1: when a request body stops arriving, Tomcat's read fails
 * and Tomcat answers 408 (with Connection: close), but it would then still try to read ("swallow")
 * the rest of the body for another read timeout before closing. This tells Tomcat not to, as it
 * does itself for a refused upload (413), so the connection closes right after the 408.
 */
public final class ReadTimeoutValve extends ValveBase {

    public ReadTimeoutValve() {
        super(true);
    }

    @Override
    public void invoke(Request request, Response response) throws IOException, ServletException {
        getNext().invoke(request, response);
        if (response.getStatus() == HttpServletResponse.SC_REQUEST_TIMEOUT
                && !"HTTP/2.0".equals(request.getProtocol())) {
            request.getCoyoteRequest().action(ActionCode.DISABLE_SWALLOW_INPUT, null);
        }
    }
}
