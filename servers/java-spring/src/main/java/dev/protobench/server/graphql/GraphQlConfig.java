package dev.protobench.server.graphql;

import graphql.GraphQLContext;
import graphql.analysis.MaxQueryComplexityInstrumentation;
import graphql.analysis.MaxQueryDepthInstrumentation;
import graphql.execution.CoercedVariables;
import graphql.language.IntValue;
import graphql.language.ObjectValue;
import graphql.language.StringValue;
import graphql.language.Value;
import graphql.schema.Coercing;
import graphql.schema.CoercingParseLiteralException;
import graphql.schema.CoercingParseValueException;
import graphql.schema.CoercingSerializeException;
import graphql.schema.GraphQLScalarType;
import dev.protobench.server.Dataset;
import dev.protobench.server.RequestPolicy;
import dev.protobench.server.rest.BenchController;
import graphql.GraphqlErrorBuilder;
import java.util.Base64;
import java.util.Locale;
import java.util.Map;
import graphql.execution.preparsed.PreparsedDocumentProvider;
import org.springframework.boot.autoconfigure.condition.ConditionalOnWebApplication;
import org.springframework.boot.autoconfigure.graphql.GraphQlSourceBuilderCustomizer;
import org.springframework.core.Ordered;
import org.springframework.core.annotation.Order;
import org.springframework.graphql.server.WebGraphQlResponse;
import org.springframework.http.HttpStatus;
import org.springframework.http.MediaType;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.graphql.execution.DataFetcherExceptionResolver;
import org.springframework.graphql.execution.RuntimeWiringConfigurer;
import org.springframework.graphql.server.WebGraphQlHandler;
import org.springframework.graphql.server.WebGraphQlInterceptor;
import org.springframework.graphql.server.webmvc.GraphQlHttpHandler;
import org.springframework.http.converter.json.MappingJackson2HttpMessageConverter;
import com.fasterxml.jackson.databind.json.JsonMapper;

/**
 * GraphQL (contract/graphql/schema.graphql, copied into the jar at graphql/) on Spring for
 * GraphQL: the schema's custom scalars, the limits (depth 16 and complexity 256, as the Rust
 * server's: a document over them is refused before it runs, as a GraphQL error), and the
 * contract's error codes in `extensions.code`.
 */
@Configuration(proxyBeanMethods = false)
public class GraphQlConfig {

    public static final int MAX_DEPTH = 16;
    public static final int MAX_COMPLEXITY = 256;

    @Bean
    public GraphQlController graphQlController(Dataset data, RequestPolicy policy) {
        return new GraphQlController(data, policy);
    }

    @Bean
    public MaxQueryDepthInstrumentation maxDepth() {
        return new MaxQueryDepthInstrumentation(MAX_DEPTH);
    }

    @Bean
    public MaxQueryComplexityInstrumentation maxComplexity() {
        return new MaxQueryComplexityInstrumentation(MAX_COMPLEXITY);
    }

    @Bean
    public RuntimeWiringConfigurer scalars() {
        return wiring -> wiring.scalar(INT64).scalar(BYTES).scalar(EMPTY);
    }

    /**
     * The HTTP handler with a JSON converter of its own: the application's Jackson mapper omits
     * null members (REST's canonical JSON), which would drop GraphQL's "data": null and the
     * nulls of unset fields that a GraphQL response carries for every selected field.
     */
    @Bean
    @ConditionalOnWebApplication
    public GraphQlHttpHandler graphQlHttpHandler(WebGraphQlHandler handler) {
        return new GraphQlHttpHandler(handler, new MappingJackson2HttpMessageConverter(JsonMapper.builder().build())) {
            /** A persisted-query answer (PersistedQueryRules) has its own status. */
            @Override
            protected HttpStatus selectResponseStatus(WebGraphQlResponse response, MediaType mediaType) {
                Integer status = PersistedQueryRules.statusOf(response);
                return status != null ? HttpStatus.valueOf(status) : super.selectResponseStatus(response, mediaType);
            }
        };
    }

    /**
     * Persisted queries (Apollo's APQ): graphql-java's ApolloPersistedQuerySupport over a store
     * of at most 1,000 documents, least recently used evicted (PersistedQueryStore).
     */
    @Bean
    public GraphQlSourceBuilderCustomizer persistedQueries() {
        PreparsedDocumentProvider provider =
                PersistedQueryRules.documentProvider(new PersistedQueryStore(PersistedQueryStore.MAX_DOCUMENTS));
        return builder -> builder.configureGraphQl(graphQl -> graphQl.preparsedDocumentProvider(provider));
    }

    /** Runs first (outermost), so that its answers are not given "data": null by dataNullOnErrors. */
    @Bean
    @Order(Ordered.HIGHEST_PRECEDENCE)
    public WebGraphQlInterceptor persistedQueryRules() {
        return new PersistedQueryRules();
    }

    /** Errors of a root field: injected failure, invalid input, unknown file. */
    @Bean
    public DataFetcherExceptionResolver contractErrors() {
        return DataFetcherExceptionResolver.forSingleError((ex, env) -> {
            String code;
            String message = ex.getMessage();
            IllegalArgumentException invalid = invalidInput(ex);
            if (ex instanceof RequestPolicy.InjectedFailure) {
                code = "INJECTED_FAILURE";
            } else if (ex instanceof BenchController.NotFound) {
                code = "NOT_FOUND";
            } else if (ex instanceof BenchController.BadRequest) {
                code = "INVALID_ARGUMENT";
            } else if (invalid != null) {
                // a request record refusing its values (both oneof members, a float out of range)
                code = "INVALID_ARGUMENT";
                message = invalid.getMessage();
            } else {
                return null;
            }
            return GraphqlErrorBuilder.newError(env).message(message).extensions(Map.of("code", code)).build();
        });
    }

    /** The IllegalArgumentException behind an argument that could not be bound, if that is what ex is. */
    private static IllegalArgumentException invalidInput(Throwable ex) {
        for (Throwable t = ex; t != null; t = t.getCause() == t ? null : t.getCause()) {
            if (t instanceof IllegalArgumentException e) {
                return e;
            }
        }
        return null;
    }

    /**
     * A response with errors and no data carries "data": null, as the contract's GraphQL errors do
     * (graphql-java leaves the member out when a request fails before or at its root fields).
     */
    @Bean
    public WebGraphQlInterceptor dataNullOnErrors() {
        return (request, chain) -> chain.next(request).map(response -> {
            if (response.getExecutionResult().isDataPresent() || response.getErrors().isEmpty()) {
                return response;
            }
            return response.transform(b -> b.data(null));
        });
    }

    /** Int64: a decimal string (accepted as a string or an integer). */
    static final GraphQLScalarType INT64 = GraphQLScalarType.newScalar().name("Int64")
            .description("A 64-bit integer, as a decimal string")
            .coercing(new Coercing<Long, String>() {
                @Override
                public String serialize(Object value, GraphQLContext context, Locale locale) {
                    if (value instanceof Number n) {
                        return Long.toString(n.longValue());
                    }
                    throw new CoercingSerializeException("not a 64-bit integer: " + value);
                }

                @Override
                public Long parseValue(Object input, GraphQLContext context, Locale locale) {
                    try {
                        if (input instanceof String s) {
                            return Long.parseLong(s);
                        }
                        if (input instanceof Number n && n.doubleValue() == Math.rint(n.doubleValue())) {
                            return Long.parseLong(n.toString().replaceAll("\\.0+$", ""));
                        }
                    } catch (NumberFormatException e) {
                        // fall through
                    }
                    throw new CoercingParseValueException("expected a 64-bit integer, found " + input);
                }

                @Override
                public Long parseLiteral(Value<?> input, CoercedVariables variables, GraphQLContext context,
                        Locale locale) {
                    try {
                        if (input instanceof StringValue s) {
                            return Long.parseLong(s.getValue());
                        }
                        if (input instanceof IntValue i) {
                            return i.getValue().longValueExact();
                        }
                    } catch (NumberFormatException | ArithmeticException e) {
                        // fall through
                    }
                    throw new CoercingParseLiteralException("expected a 64-bit integer, found " + input);
                }
            }).build();

    /** Bytes: standard base64 with padding. */
    static final GraphQLScalarType BYTES = GraphQLScalarType.newScalar().name("Bytes")
            .description("Bytes, as standard base64 with padding")
            .coercing(new Coercing<byte[], String>() {
                @Override
                public String serialize(Object value, GraphQLContext context, Locale locale) {
                    if (value instanceof byte[] b) {
                        return Base64.getEncoder().encodeToString(b);
                    }
                    throw new CoercingSerializeException("not bytes");
                }

                @Override
                public byte[] parseValue(Object input, GraphQLContext context, Locale locale) {
                    try {
                        if (input instanceof String s) {
                            return Base64.getDecoder().decode(s);
                        }
                    } catch (IllegalArgumentException e) {
                        // fall through
                    }
                    throw new CoercingParseValueException("expected base64 bytes");
                }

                @Override
                public byte[] parseLiteral(Value<?> input, CoercedVariables variables, GraphQLContext context,
                        Locale locale) {
                    if (input instanceof StringValue s) {
                        return parseValue(s.getValue(), context, locale);
                    }
                    throw new CoercingParseLiteralException("expected base64 bytes");
                }
            }).build();

    /** Empty: always the object {}. */
    static final GraphQLScalarType EMPTY = GraphQLScalarType.newScalar().name("Empty")
            .description("The empty message: always {}")
            .coercing(new Coercing<Map<String, Object>, Map<String, Object>>() {
                @Override
                public Map<String, Object> serialize(Object value, GraphQLContext context, Locale locale) {
                    return Map.of();
                }

                @Override
                public Map<String, Object> parseValue(Object input, GraphQLContext context, Locale locale) {
                    if (input instanceof Map<?, ?> m && m.isEmpty()) {
                        return Map.of();
                    }
                    throw new CoercingParseValueException("expected {}");
                }

                @Override
                public Map<String, Object> parseLiteral(Value<?> input, CoercedVariables variables,
                        GraphQLContext context, Locale locale) {
                    if (input instanceof ObjectValue o && o.getObjectFields().isEmpty()) {
                        return Map.of();
                    }
                    throw new CoercingParseLiteralException("expected {}");
                }
            }).build();
}
