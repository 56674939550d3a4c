package dev.protobench.server.soap;

import dev.protobench.server.Dataset;
import java.util.List;
import org.springframework.boot.autoconfigure.condition.ConditionalOnWebApplication;
import org.springframework.boot.web.servlet.ServletRegistrationBean;
import org.springframework.context.ApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.io.ClassPathResource;
import org.springframework.ws.config.annotation.WsConfigurationSupport;
import org.springframework.ws.server.endpoint.adapter.DefaultMethodEndpointAdapter;
import org.springframework.ws.soap.SoapMessageFactory;
import org.springframework.ws.soap.saaj.SaajSoapMessageFactory;
import org.springframework.ws.transport.http.MessageDispatcherServlet;
import org.springframework.ws.transport.http.WebServiceMessageReceiverHandlerAdapter;
import org.springframework.ws.wsdl.wsdl11.SimpleWsdl11Definition;

/**
 * Spring-WS (SAAJ message factory, the default) with a MessageDispatcherServlet at /soap.
 * Extends WsConfigurationSupport (what @EnableWs imports) to put the strict JAXB processor in
 * place of the default one.
 */
@Configuration(proxyBeanMethods = false)
@ConditionalOnWebApplication
public class SoapConfig extends WsConfigurationSupport {

    @Bean
    public SoapData soapData(Dataset data) {
        return new SoapData(data);
    }

    @Bean
    public SaajSoapMessageFactory messageFactory() {
        return new SaajSoapMessageFactory();
    }

    @Bean(name = MessageDispatcherServlet.DEFAULT_MESSAGE_RECEIVER_HANDLER_ADAPTER_BEAN_NAME)
    public WebServiceMessageReceiverHandlerAdapter messageReceiverHandlerAdapter(SoapMessageFactory factory) {
        SoapMessageReceiverAdapter adapter = new SoapMessageReceiverAdapter();
        adapter.setMessageFactory(factory);
        return adapter;
    }

    @Bean
    public SimpleWsdl11Definition protobenchWsdl() {
        return new SimpleWsdl11Definition(new ClassPathResource("contract/wsdl/protobench.wsdl"));
    }

    @Bean
    public ServletRegistrationBean<MessageDispatcherServlet> soapServlet(ApplicationContext context,
            SimpleWsdl11Definition wsdl) {
        SoapDispatcherServlet servlet = new SoapDispatcherServlet(wsdl);
        servlet.setApplicationContext(context);
        servlet.setTransformWsdlLocations(true);
        ServletRegistrationBean<MessageDispatcherServlet> reg = new ServletRegistrationBean<>(servlet, "/soap");
        reg.setName("soap");
        reg.setLoadOnStartup(1);
        return reg;
    }

    @Bean
    @Override
    public DefaultMethodEndpointAdapter defaultMethodEndpointAdapter() {
        StrictJaxbElementProcessor jaxb = new StrictJaxbElementProcessor();
        DefaultMethodEndpointAdapter adapter = new DefaultMethodEndpointAdapter();
        adapter.setMethodArgumentResolvers(List.of(jaxb));
        adapter.setMethodReturnValueHandlers(List.of(jaxb));
        return adapter;
    }

    @Bean
    public SoapFaults soapFaults() {
        return new SoapFaults();
    }

    @Bean
    public UnknownOperationMapping unknownOperationMapping() {
        return new UnknownOperationMapping();
    }

    @Bean
    public BenchEndpoint benchEndpoint(Dataset data, SoapData soapData, dev.protobench.server.RequestPolicy policy) {
        return new BenchEndpoint(data, soapData, policy);
    }
}
