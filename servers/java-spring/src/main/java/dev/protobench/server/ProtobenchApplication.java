package dev.protobench.server;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.cfg.CoercionAction;
import com.fasterxml.jackson.databind.cfg.CoercionInputShape;
import com.fasterxml.jackson.databind.type.LogicalType;
import org.springframework.boot.autoconfigure.jackson.Jackson2ObjectMapperBuilderCustomizer;
import dev.protobench.server.graphql.GraphQlConfig;
import dev.protobench.server.grpc.GrpcData;
import dev.protobench.server.grpc.GrpcServerLifecycle;
import dev.protobench.server.rest.BenchController;
import dev.protobench.server.rest.RestErrors;
import dev.protobench.server.soap.SoapConfig;
import dev.protobench.server.stream.StreamWebConfig;
import dev.protobench.server.web.TomcatConfig;
import java.io.IOException;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.autoconfigure.webservices.WebServicesAutoConfiguration;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import sun.misc.Signal;

/**
 * The protobench reference server on Spring Boot: REST and SOAP on embedded Tomcat (Spring Web
 * MVC, Spring-WS), gRPC on grpc-java beside it, all in one JVM. Configured only by the
 * PROTOBENCH_* environment variables.
 */
@SpringBootConfiguration(proxyBeanMethods = false)
@EnableAutoConfiguration(exclude = WebServicesAutoConfiguration.class)
@Import({TomcatConfig.class, SoapConfig.class, StreamWebConfig.class, GraphQlConfig.class, RestErrors.class, ListeningLines.class})
public class ProtobenchApplication {

    /** Read in main() before Spring starts; a bad PROTOBENCH_* value ends the process there. */
    private static BenchConfig CONFIG;

    @Bean
    public BenchConfig benchConfig() {
        return CONFIG;
    }

    /**
     * proto3 JSON parsing rules that Jackson does not apply by default: a number or boolean is
     * not a string, and a number or string is not a boolean (400 instead of a silent coercion).
     */
    @Bean
    public Jackson2ObjectMapperBuilderCustomizer strictJsonCoercion() {
        return builder -> builder.postConfigurer(mapper -> {
            mapper.coercionConfigFor(LogicalType.Textual)
                    .setCoercion(CoercionInputShape.Integer, CoercionAction.Fail)
                    .setCoercion(CoercionInputShape.Float, CoercionAction.Fail)
                    .setCoercion(CoercionInputShape.Boolean, CoercionAction.Fail);
            mapper.coercionConfigFor(LogicalType.Boolean)
                    .setCoercion(CoercionInputShape.Integer, CoercionAction.Fail)
                    .setCoercion(CoercionInputShape.Float, CoercionAction.Fail)
                    .setCoercion(CoercionInputShape.String, CoercionAction.Fail);
            mapper.coercionConfigFor(LogicalType.Integer)
                    .setCoercion(CoercionInputShape.Boolean, CoercionAction.Fail);
            mapper.coercionConfigFor(LogicalType.Float)
                    .setCoercion(CoercionInputShape.Boolean, CoercionAction.Fail);
        });
    }

    @Bean
    public RequestPolicy requestPolicy(BenchConfig config) {
        return new RequestPolicy(config);
    }

    @Bean
    public Dataset dataset(BenchConfig config, ObjectMapper mapper) throws IOException {
        return new Dataset(config.dataset, mapper);
    }

    @Bean
    public BenchController benchController(Dataset data, RequestPolicy policy) {
        return new BenchController(data, policy);
    }

    /** The dataset as protobuf messages: gRPC's answers, and every transport's feed events. */
    @Bean
    public GrpcData grpcData(Dataset data) throws IOException {
        return new GrpcData(data);
    }

    @Bean
    public GrpcServerLifecycle grpcServer(BenchConfig config, GrpcData grpcData, RequestPolicy policy) {
        return new GrpcServerLifecycle(config, grpcData, policy);
    }

    public static void main(String[] args) throws Exception {
        try {
            CONFIG = BenchConfig.fromEnvironment();
        } catch (IllegalArgumentException e) {
            System.err.println("protobench-java-spring: " + e.getMessage());
            System.exit(2);
        }
        // SIGTERM / SIGINT: exit 0 after Spring's shutdown hook has drained Tomcat and gRPC.
        Signal.handle(new Signal("TERM"), s -> System.exit(0));
        Signal.handle(new Signal("INT"), s -> System.exit(0));

        SpringApplication app = new SpringApplication(ProtobenchApplication.class);
        app.setWebApplicationType(CONFIG.anyHttp() ? WebApplicationType.SERVLET : WebApplicationType.NONE);
        ConfigurableApplicationContext ctx = app.run(args);
        if (!CONFIG.anyHttp()) {
            ctx.getBean(GrpcServerLifecycle.class).awaitTermination();
        }
    }
}
