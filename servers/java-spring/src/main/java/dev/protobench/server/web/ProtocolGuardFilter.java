package dev.protobench.server.web;

import dev.protobench.server.BenchConfig.Protocol;
import jakarta.servlet.FilterChain;
import jakarta.servlet.ServletException;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.Locale;
import org.springframework.web.filter.OncePerRequestFilter;

/**
 * Runs first on every HTTP request, before any parsing:
 * - keeps each path on its protocol's listener(s): /soap only on the soap listener, /graphql only
 *   on the graphql and graphql-get listeners, /v1/... only on the rest and rest-h2 listeners (404
 *   otherwise);
 * - enforces PROTOBENCH_MAX_REQUEST_BYTES (413), from Content-Length or, for a body without one
 *   (chunked HTTP/1.1, HTTP/2), by reading at most limit + 1 bytes;
 * - on /soap: methods other than POST and GET ?wsdl get 405, a POST whose content type is not
 *   text/xml gets 415.
 * - on /graphql: methods other than POST (graphql-get: GET and POST) get 405, a POST whose content
 *   type is not application/json 415; a GET on graphql-get goes on as the POST it stands for
 *   (GraphQlGetRequests).
 * REST's 404/405/415 come from Spring MVC (RestErrors).
 */
public final class ProtocolGuardFilter extends OncePerRequestFilter {

    private final int maxRequestBytes;

    public ProtocolGuardFilter(int maxRequestBytes) {
        this.maxRequestBytes = maxRequestBytes;
    }

    @Override
    protected void doFilterInternal(HttpServletRequest request, HttpServletResponse response, FilterChain chain)
            throws ServletException, IOException {
        Protocol protocol = (Protocol) request.getAttribute(ConnectorRegistry.PROTOCOL_ATTRIBUTE);
        String path = request.getRequestURI();
        boolean soapPath = "/soap".equals(path);
        boolean soapListener = protocol == Protocol.SOAP;
        String method = request.getMethod();
        boolean graphqlListener = protocol != null && protocol.isGraphQl();
        boolean graphqlGet = protocol == Protocol.GRAPHQL_GET && "GET".equals(method);
        if (soapPath != soapListener || "/graphql".equals(path) != graphqlListener) {
            error(response, 404, "not found");
            return;
        }
        if (graphqlListener && !"POST".equals(method) && !graphqlGet) {
            String allowed = protocol == Protocol.GRAPHQL_GET ? "GET, POST" : "POST";
            response.setHeader("Allow", allowed);
            error(response, 405, "method " + method + " is not allowed on /graphql; allowed: " + allowed);
            return;
        }
        if (soapListener) {
            boolean wsdl = "GET".equals(method) && "wsdl".equalsIgnoreCase(request.getQueryString());
            if (!wsdl && !"POST".equals(method)) {
                response.setHeader("Allow", "GET, POST");
                error(response, 405, "method not allowed: POST (or GET ?wsdl)");
                return;
            }
        }

        long length = request.getContentLengthLong();
        if (length > maxRequestBytes) {
            closeAfter(request, response);
            error(response, 413, "request body larger than " + maxRequestBytes + " bytes");
            return;
        }
        if (length < 0 && ("POST".equals(method) || "PUT".equals(method) || "PATCH".equals(method))) {
            byte[] body = readAtMost(request.getInputStream(), maxRequestBytes + 1);
            if (body.length > maxRequestBytes) {
                closeAfter(request, response);
                error(response, 413, "request body larger than " + maxRequestBytes + " bytes");
                return;
            }
            request = new BufferedBodyRequest(request, body);
        }

        if (soapListener && "POST".equals(method) && !isTextXml(request.getContentType())) {
            error(response, 415, "unsupported content type: use text/xml");
            return;
        }
        if (graphqlGet) {
            request = GraphQlGetRequests.asPost(request, response);
            if (request == null) {
                return;
            }
        } else if (graphqlListener && !isMime(request.getContentType(), "application/json")) {
            error(response, 415, "content type " + request.getContentType()
                    + " is not supported; expected application/json");
            return;
        }
        chain.doFilter(request, response);
    }

    /**
     * HTTP/1.1: close the connection after this answer (the rest of the body is not read). Not on
     * HTTP/2, where a Connection header makes the response malformed (RFC 9113 8.2.2) and only
     * the stream ends.
     */
    private static void closeAfter(HttpServletRequest request, HttpServletResponse response) {
        if (!"HTTP/2.0".equals(request.getProtocol())) {
            response.setHeader("Connection", "close");
        }
    }

    private static boolean isTextXml(String contentType) {
        return isMime(contentType, "text/xml");
    }

    private static boolean isMime(String contentType, String expected) {
        if (contentType == null) {
            return false;
        }
        int semi = contentType.indexOf(';');
        String mime = (semi < 0 ? contentType : contentType.substring(0, semi)).trim().toLowerCase(Locale.ROOT);
        return mime.equals(expected);
    }

    private static byte[] readAtMost(InputStream in, int max) throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream(Math.min(max, 64 * 1024));
        byte[] buf = new byte[16 * 1024];
        int total = 0;
        while (total < max) {
            int n = in.read(buf, 0, Math.min(buf.length, max - total));
            if (n < 0) {
                break;
            }
            out.write(buf, 0, n);
            total += n;
        }
        return out.toByteArray();
    }

    static void error(HttpServletResponse response, int status, String message) throws IOException {
        byte[] body = ("{\"code\":" + status + ",\"message\":\"" + message.replace("\"", "'") + "\"}")
                .getBytes(StandardCharsets.UTF_8);
        response.setStatus(status);
        response.setContentType("application/json");
        response.setContentLength(body.length);
        response.getOutputStream().write(body);
    }
}
