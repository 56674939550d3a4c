"""Third-party SOAP check, for any protobench server: python zeep reads the served WSDL and calls the
server through it. Usage: zeep_check.py http(s)://host:port/soap?wsdl [CA.pem]
Prints `ok ...` / `FAIL ...` lines and `check: N passed, M failed`."""
import sys

import requests
import zeep
from zeep.transports import Transport

passed = failed = 0


def check(name, good, detail=""):
    global passed, failed
    if good:
        passed += 1
        print("ok   zeep", name)
    else:
        failed += 1
        print("FAIL zeep", name + ":", str(detail)[:300])


session = requests.Session()
session.trust_env = False  # loopback only: no proxy or CA bundle from the environment
if len(sys.argv) > 2:
    session.verify = sys.argv[2]  # the test's throw-away self-signed certificate
client = zeep.Client(sys.argv[1], transport=Transport(session=session))
svc = client.service
try:
    r = svc.GetInteger()
    check("GetInteger", r == 2147483647, r)
    r = svc.Echo(payload="héllo & <world>")
    check("Echo", r == "héllo & <world>", r)
    r = svc.ModifyProduct(id=7, name="n", description="añ😀b", price=12.25, stock=3, tags=["a", "b"])
    check("ModifyProduct", r.description == "b😀ña" and list(r.tags) == ["a", "b"] and r.price == 12.25, r)
    r = svc.GetInventoryM()
    check("GetInventoryM", len(r) == 480 and r[0].deviceId, len(r))
    r = svc.GetInventoryL()
    check("GetInventoryL", len(r) == 1395 and r[0].location.warehouse, len(r))
    r = svc.GetFile(name="file-455k")
    check("GetFile", r.name == "file-455k" and len(r.content) == 455000 and r.content[1] == 138, r.name)
    r = svc.CloneText(text="Hello World!", times=3)
    check("CloneText", list(r) == ["Hello World!"] * 3, r)
    r = svc.SayHello(request={"name": "x", "d": 4.5, "f": 1.5, "b": True, "n": 3, "l": 444325235223,
                              "c1": "of course", "pets": [{"name": "p", "color": "GREEN"}]})
    check("SayHello", r.l == 444325235223 and r.c1 == "of course" and r.c2 is None and r.pets[0].color == "GREEN", r)
    try:
        svc.GetFile(name="nope")
        check("unknown file -> Client fault", False, "no fault")
    except zeep.exceptions.Fault as f:
        check("unknown file -> Client fault", f.code.endswith("Client"), f.code)
except Exception as e:  # any client-side failure is a failed check
    check("calls", False, repr(e))
print(f"check: {passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
