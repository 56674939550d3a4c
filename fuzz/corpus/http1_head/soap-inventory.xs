HTTP/1.1 200 OK
content-type: text/xml; charset=utf-8
content-length: 222
connection: close
date: Fri, 27 Nov 2026 15:53:01 GMT

<?xml version="1.0" encoding="utf-8"?><soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/"><soap:Body><GetInventoryXsResponse xmlns="urn:protobench:v1"></GetInventoryXsResponse></soap:Body></soap:Envelope>