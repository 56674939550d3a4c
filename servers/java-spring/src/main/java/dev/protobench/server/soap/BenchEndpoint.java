package dev.protobench.server.soap;

import dev.protobench.server.Dataset;
import dev.protobench.server.RequestPolicy;
import dev.protobench.soap.gen.CloneRequest;
import dev.protobench.soap.gen.CloneResponse;
import dev.protobench.soap.gen.DeviceList;
import dev.protobench.soap.gen.EchoMessage;
import dev.protobench.soap.gen.Empty;
import dev.protobench.soap.gen.FileContent;
import dev.protobench.soap.gen.FileRequest;
import dev.protobench.soap.gen.Hello;
import dev.protobench.soap.gen.HelloReply;
import dev.protobench.soap.gen.HelloRequest;
import dev.protobench.soap.gen.IntegerList;
import dev.protobench.soap.gen.IntegerValue;
import dev.protobench.soap.gen.InventoryStatus;
import dev.protobench.soap.gen.ItemList;
import dev.protobench.soap.gen.ObjectFactory;
import dev.protobench.soap.gen.ObjectList;
import dev.protobench.soap.gen.Pet;
import dev.protobench.soap.gen.Product;
import jakarta.xml.bind.JAXBElement;
import java.util.Collections;
import java.util.List;
import org.springframework.ws.server.endpoint.annotation.Endpoint;
import org.springframework.ws.server.endpoint.annotation.PayloadRoot;
import org.springframework.ws.server.endpoint.annotation.RequestPayload;
import org.springframework.ws.server.endpoint.annotation.ResponsePayload;

/**
 * The SOAP form of every operation: one @PayloadRoot method per <Op>Request element, JAXB
 * classes generated from contract/wsdl/protobench.xsd.
 */
@Endpoint
public class BenchEndpoint {

    static final String NS = "urn:protobench:v1";

    private final ObjectFactory factory = new ObjectFactory();
    private final Dataset data;
    private final SoapData soap;
    private final RequestPolicy policy;

    public BenchEndpoint(Dataset data, SoapData soap, RequestPolicy policy) {
        this.data = data;
        this.soap = soap;
        this.policy = policy;
    }

    private static String str(String s) {
        return s == null ? "" : s;
    }

    @PayloadRoot(namespace = NS, localPart = "GetInventoryXsRequest")
    @ResponsePayload
    public JAXBElement<Empty> getInventoryXs(@RequestPayload JAXBElement<Empty> request) {
        policy.serviceTimeThenDraw();
        return factory.createGetInventoryXsResponse(new Empty());
    }

    @PayloadRoot(namespace = NS, localPart = "GetInventorySRequest")
    @ResponsePayload
    public JAXBElement<InventoryStatus> getInventoryS(@RequestPayload JAXBElement<Empty> request) {
        policy.serviceTimeThenDraw();
        return factory.createGetInventorySResponse(soap.inventoryStatus);
    }

    @PayloadRoot(namespace = NS, localPart = "GetInventoryMRequest")
    @ResponsePayload
    public JAXBElement<DeviceList> getInventoryM(@RequestPayload JAXBElement<Empty> request) {
        policy.serviceTimeThenDraw();
        return factory.createGetInventoryMResponse(soap.deviceList);
    }

    @PayloadRoot(namespace = NS, localPart = "GetInventoryLRequest")
    @ResponsePayload
    public JAXBElement<ItemList> getInventoryL(@RequestPayload JAXBElement<Empty> request) {
        policy.serviceTimeThenDraw();
        return factory.createGetInventoryLResponse(soap.itemList);
    }

    /** A missing non-optional element decodes to its default, as in the other encodings. */
    private static Product normalize(Product p) {
        p.setName(str(p.getName()));
        p.setDescription(str(p.getDescription()));
        return p;
    }

    @PayloadRoot(namespace = NS, localPart = "EchoProductRequest")
    @ResponsePayload
    public JAXBElement<Product> echoProduct(@RequestPayload JAXBElement<Product> request) {
        Product p = normalize(request.getValue());
        policy.serviceTimeThenDraw();
        return factory.createEchoProductResponse(p);
    }

    @PayloadRoot(namespace = NS, localPart = "ModifyProductRequest")
    @ResponsePayload
    public JAXBElement<Product> modifyProduct(@RequestPayload JAXBElement<Product> request) {
        Product p = normalize(request.getValue());
        policy.serviceTimeThenDraw();
        Product out = new Product();
        out.setId(p.getId());
        out.setName(p.getName());
        out.setDescription(Dataset.reverseScalars(p.getDescription()));
        out.setPrice(p.getPrice());
        out.setStock(p.getStock());
        out.getTags().addAll(p.getTags());
        return factory.createModifyProductResponse(out);
    }

    @PayloadRoot(namespace = NS, localPart = "CloneTextRequest")
    @ResponsePayload
    public JAXBElement<CloneResponse> cloneText(@RequestPayload JAXBElement<CloneRequest> request) {
        CloneRequest r = request.getValue();
        String text = str(r.getText());
        String invalid = Dataset.validateClone(text, r.getTimes());
        if (invalid != null) {
            throw new SoapClientFault(invalid);
        }
        policy.serviceTimeThenDraw();
        CloneResponse out = new CloneResponse();
        out.getTexts().addAll(Collections.nCopies(r.getTimes(), text));
        return factory.createCloneTextResponse(out);
    }

    @PayloadRoot(namespace = NS, localPart = "GetIntegerRequest")
    @ResponsePayload
    public JAXBElement<IntegerValue> getInteger(@RequestPayload JAXBElement<Empty> request) {
        policy.serviceTimeThenDraw();
        IntegerValue v = new IntegerValue();
        v.setValue(Dataset.INTEGER_VALUE);
        return factory.createGetIntegerResponse(v);
    }

    @PayloadRoot(namespace = NS, localPart = "GetIntegersRequest")
    @ResponsePayload
    public JAXBElement<IntegerList> getIntegers(@RequestPayload JAXBElement<Empty> request) {
        policy.serviceTimeThenDraw();
        return factory.createGetIntegersResponse(soap.integerList);
    }

    @PayloadRoot(namespace = NS, localPart = "GetObjectsRequest")
    @ResponsePayload
    public JAXBElement<ObjectList> getObjects(@RequestPayload JAXBElement<Empty> request) {
        policy.serviceTimeThenDraw();
        return factory.createGetObjectsResponse(soap.objectList);
    }

    @PayloadRoot(namespace = NS, localPart = "GetFileRequest")
    @ResponsePayload
    public JAXBElement<FileContent> getFile(@RequestPayload JAXBElement<FileRequest> request) {
        String name = str(request.getValue().getName());
        byte[] content = data.files.get(name);
        if (content == null) {
            throw new SoapClientFault("unknown file: " + name);
        }
        policy.serviceTimeThenDraw();
        FileContent out = new FileContent();
        out.setName(name);
        out.setContent(content);
        return factory.createGetFileResponse(out);
    }

    @PayloadRoot(namespace = NS, localPart = "EchoRequest")
    @ResponsePayload
    public JAXBElement<EchoMessage> echo(@RequestPayload JAXBElement<EchoMessage> request) {
        EchoMessage m = request.getValue();
        m.setPayload(str(m.getPayload()));
        policy.serviceTimeThenDraw();
        return factory.createEchoResponse(m);
    }

    @PayloadRoot(namespace = NS, localPart = "SayHelloRequest")
    @ResponsePayload
    public JAXBElement<HelloReply> sayHello(@RequestPayload JAXBElement<HelloRequest> request) {
        Hello h = request.getValue().getRequest();
        if (h != null) {
            if (h.getC1() != null && h.isC2() != null) {
                throw new SoapClientFault("oneof choice: both c1 and c2 are set");
            }
            h.setName(str(h.getName()));
            List<Pet> pets = h.getPets();
            for (Pet pet : pets) {
                pet.setName(str(pet.getName()));
                if (pet.getColor() == null) {
                    // JAXB decodes both a missing and an unknown enum name as null
                    throw new SoapClientFault("pets.color: missing or not a Color name");
                }
            }
        }
        policy.serviceTimeThenDraw();
        HelloReply reply = new HelloReply();
        reply.setResponse(h);
        return factory.createSayHelloResponse(reply);
    }
}
