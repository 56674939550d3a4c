package dev.protobench.server.web;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.StreamReadFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import graphql.execution.preparsed.persisted.PersistedQuerySupport;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Enumeration;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The GET form of the graphql-get listener (GraphQL-over-HTTP GET, Apollo's persisted queries):
 * GET /graphql?query=&operationName=&variables=<JSON>&extensions=<JSON>. Spring for GraphQL
 * serves POST only, so the GET is handed on as the POST JSON request it stands for, with the
 * request marked (GET_ATTRIBUTE) so that a mutation is refused (graphql.PersistedQueryRules).
 * A hash-only GET carries graphql-java's PersistedQueryMarker as its document (Spring requires
 * one); graphql-java's ApolloPersistedQuerySupport then takes the document from its store.
 */
public final class GraphQlGetRequests {

    /** Request attribute: the request arrived as a GET (mutations are refused with 405). */
    public static final String GET_ATTRIBUTE = "dev.protobench.graphql.get";

    private static final JsonMapper JSON = JsonMapper.builder()
            .enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION).build();

    private GraphQlGetRequests() {
    }

    /**
     * The GET as a POST application/json request, or null once a 400 answer naming the bad
     * parameter has been written.
     */
    static HttpServletRequest asPost(HttpServletRequest request, HttpServletResponse response) throws IOException {
        String query = param(request, "query");
        String operationName = param(request, "operationName");
        ObjectNode body = JSON.createObjectNode();
        JsonNode variables;
        JsonNode extensions;
        try {
            variables = object(request, "variables");
            extensions = object(request, "extensions");
        } catch (IllegalArgumentException e) {
            errors(response, 400, e.getMessage());
            return null;
        }
        if (query == null && (extensions == null || !extensions.has("persistedQuery"))) {
            errors(response, 400, "a GET needs extensions={\"persistedQuery\":{\"version\":1,\"sha256Hash\":\"<hex>\"}}"
                    + " or a query parameter; neither was given");
            return null;
        }
        body.put("query", query == null ? PersistedQuerySupport.PERSISTED_QUERY_MARKER : query);
        if (operationName != null) {
            body.put("operationName", operationName);
        }
        if (variables != null) {
            body.set("variables", variables);
        }
        if (extensions != null) {
            body.set("extensions", extensions);
        }
        request.setAttribute(GET_ATTRIBUTE, Boolean.TRUE);
        return new AsPost(request, JSON.writeValueAsBytes(body));
    }

    /** A query-string parameter (Tomcat decodes %XX and +), null when absent or empty. */
    private static String param(HttpServletRequest request, String name) {
        String v = request.getParameter(name);
        return v == null || v.isEmpty() ? null : v;
    }

    private static JsonNode object(HttpServletRequest request, String name) {
        String v = param(request, name);
        if (v == null) {
            return null;
        }
        JsonNode node;
        try {
            node = JSON.readTree(v);
        } catch (JsonProcessingException e) {
            throw new IllegalArgumentException(name + ": not JSON; expected a JSON object");
        }
        if (node == null || !node.isObject()) {
            throw new IllegalArgumentException(name + ": expected a JSON object, found "
                    + (node == null ? "nothing" : node.getNodeType().toString().toLowerCase(Locale.ROOT)));
        }
        return node;
    }

    /** A GraphQL-over-HTTP error answer: {"errors":[{"message": ...}]}. */
    private static void errors(HttpServletResponse response, int status, String message) throws IOException {
        byte[] body = JSON.writeValueAsBytes(Map.of("errors", List.of(Map.of("message", message))));
        response.setStatus(status);
        response.setContentType("application/json");
        response.setContentLength(body.length);
        response.getOutputStream().write(body);
    }

    /** The GET seen as a POST with a JSON body. */
    private static final class AsPost extends BufferedBodyRequest {
        private static final String CONTENT_TYPE = "Content-Type";

        AsPost(HttpServletRequest request, byte[] body) {
            super(request, body);
        }

        @Override
        public String getMethod() {
            return "POST";
        }

        @Override
        public String getContentType() {
            return "application/json";
        }

        @Override
        public String getHeader(String name) {
            return CONTENT_TYPE.equalsIgnoreCase(name) ? getContentType() : super.getHeader(name);
        }

        @Override
        public Enumeration<String> getHeaders(String name) {
            return CONTENT_TYPE.equalsIgnoreCase(name) ? Collections.enumeration(List.of(getContentType()))
                    : super.getHeaders(name);
        }

        @Override
        public Enumeration<String> getHeaderNames() {
            List<String> names = new ArrayList<>();
            for (Enumeration<String> e = super.getHeaderNames(); e.hasMoreElements();) {
                String n = e.nextElement();
                if (!CONTENT_TYPE.equalsIgnoreCase(n)) {
                    names.add(n);
                }
            }
            names.add(CONTENT_TYPE);
            return Collections.enumeration(names);
        }
    }
}
