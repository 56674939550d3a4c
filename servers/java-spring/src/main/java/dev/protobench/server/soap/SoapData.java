package dev.protobench.server.soap;

import dev.protobench.server.Dataset;
import dev.protobench.server.rest.Model;
import dev.protobench.soap.gen.Device;
import dev.protobench.soap.gen.DeviceList;
import dev.protobench.soap.gen.DeviceState;
import dev.protobench.soap.gen.IntegerList;
import dev.protobench.soap.gen.InventoryStatus;
import dev.protobench.soap.gen.Item;
import dev.protobench.soap.gen.ItemCategory;
import dev.protobench.soap.gen.ItemList;
import dev.protobench.soap.gen.Location;
import dev.protobench.soap.gen.ObjectList;
import dev.protobench.soap.gen.Person;

/** The dataset as JAXB objects (classes generated from contract/wsdl/protobench.xsd), built once. */
public final class SoapData {

    public final InventoryStatus inventoryStatus;
    public final DeviceList deviceList;
    public final ItemList itemList;
    public final ObjectList objectList;
    public final IntegerList integerList;

    public SoapData(Dataset data) {
        Model.InventoryStatus s = data.inventoryStatus;
        inventoryStatus = new InventoryStatus();
        inventoryStatus.setServiceName(s.serviceName());
        inventoryStatus.setRegionCode(s.regionCode());
        inventoryStatus.setStatusMessage(s.statusMessage());
        inventoryStatus.getRecentErrors().addAll(s.recentErrors());
        inventoryStatus.setCpuUtilization(s.cpuUtilization());
        inventoryStatus.setMemoryUtilization(s.memoryUtilization());
        inventoryStatus.setAverageResponseMillis(s.averageResponseMillis());
        inventoryStatus.setActiveDeviceCount(s.activeDeviceCount());

        deviceList = new DeviceList();
        for (Model.Device d : data.devices) {
            Device x = new Device();
            x.setDeviceId(d.deviceId());
            x.setState(DeviceState.fromValue(d.state().name()));
            x.setReadingCount(d.readingCount());
            deviceList.getDevices().add(x);
        }

        itemList = new ItemList();
        for (Model.Item i : data.items) {
            Item x = new Item();
            x.setId(i.id());
            x.setName(i.name());
            x.setCategory(ItemCategory.fromValue(i.category().name()));
            x.setUnitPrice(i.unitPrice());
            x.setWeightKg(i.weightKg());
            x.setQuantity(i.quantity());
            x.setInStock(i.inStock());
            x.setFragile(i.fragile());
            if (i.location() != null) {
                Location l = new Location();
                l.setWarehouse(i.location().warehouse());
                l.setAisle(i.location().aisle());
                l.setShelf(i.location().shelf());
                l.setBin(i.location().bin());
                x.setLocation(l);
            }
            x.setDescription(i.description());
            x.setSupplier(i.supplier());
            itemList.getItems().add(x);
        }

        objectList = new ObjectList();
        for (Model.Person p : data.people) {
            Person x = new Person();
            x.setId(p.id());
            x.setFirstName(p.firstName());
            x.setLastName(p.lastName());
            x.setEmail(p.email());
            x.setAge(p.age());
            x.setActive(p.active());
            x.setBalance(p.balance());
            objectList.getPeople().add(x);
        }

        integerList = new IntegerList();
        for (int v : data.integers) {
            integerList.getValues().add(v);
        }
    }
}
