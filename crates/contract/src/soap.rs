//! SOAP 1.1 envelopes and faults around the contract's XML form.

use crate::xml::{self, Element, XmlError};

/// The SOAP 1.1 envelope namespace.
pub const ENVELOPE_NAMESPACE: &str = "http://schemas.xmlsoap.org/soap/envelope/";

/// The content type of SOAP 1.1 messages.
pub const CONTENT_TYPE: &str = "text/xml; charset=utf-8";

/// Everything an envelope holds before the body element.
pub const ENVELOPE_HEAD: &str = concat!(
    r#"<?xml version="1.0" encoding="utf-8"?>"#,
    r#"<soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/"><soap:Body>"#
);
/// Everything an envelope holds after the body element.
pub const ENVELOPE_TAIL: &str = "</soap:Body></soap:Envelope>";

/// A whole envelope whose body is `element` holding `message`'s fields.
pub fn envelope(element: &str, message: &crate::Message) -> String {
    let mut out = String::with_capacity(256);
    out.push_str(ENVELOPE_HEAD);
    message.write_xml_element(&mut out, element);
    out.push_str(ENVELOPE_TAIL);
    out
}

/// Who is at fault, as SOAP 1.1 says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultCode {
    /// `soap:Client`: the request was wrong.
    Client,
    /// `soap:Server`: the server failed.
    Server,
}

impl FaultCode {
    /// `soap:Client` or `soap:Server`.
    pub fn qualified(self) -> &'static str {
        match self {
            FaultCode::Client => "soap:Client",
            FaultCode::Server => "soap:Server",
        }
    }
}

/// A fault envelope.
pub fn fault(code: FaultCode, message: &str) -> String {
    let mut out = String::with_capacity(256);
    out.push_str(ENVELOPE_HEAD);
    out.push_str("<soap:Fault><faultcode>");
    out.push_str(code.qualified());
    out.push_str("</faultcode><faultstring>");
    xml::escape_into(&mut out, message);
    out.push_str("</faultstring></soap:Fault>");
    out.push_str(ENVELOPE_TAIL);
    out
}

/// A fault read back from an envelope.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fault {
    /// The `faultcode` text, e.g. `soap:Client`.
    pub code: String,
    /// The `faultstring` text.
    pub message: String,
}

/// Parses an envelope and returns the body's single payload element (a
/// `Fault` element is returned as is; see [`as_fault`]).
pub fn parse_envelope(bytes: &[u8]) -> Result<Element, XmlError> {
    let root = xml::parse(bytes)?;
    if root.name != "Envelope" || root.namespace.as_deref() != Some(ENVELOPE_NAMESPACE) {
        return Err(<XmlError as serde::de::Error>::custom(format!(
            "root element is {}, expected a SOAP 1.1 Envelope",
            root.qualified_name()
        )));
    }
    let body = root
        .into_children()
        .find(|c| c.name == "Body" && c.namespace.as_deref() == Some(ENVELOPE_NAMESPACE))
        .ok_or_else(|| <XmlError as serde::de::Error>::custom("the envelope has no Body"))?;
    let mut elements = body.into_children();
    let payload = elements
        .next()
        .ok_or_else(|| <XmlError as serde::de::Error>::custom("the Body is empty"))?;
    if elements.next().is_some() {
        return Err(<XmlError as serde::de::Error>::custom(
            "the Body holds more than one element",
        ));
    }
    Ok(payload)
}

/// The fault, if `payload` is a SOAP Fault element.
pub fn as_fault(payload: &Element) -> Option<Fault> {
    if payload.name != "Fault" || payload.namespace.as_deref() != Some(ENVELOPE_NAMESPACE) {
        return None;
    }
    let text = |name: &str| {
        payload
            .children
            .iter()
            .find(|c| c.name == name)
            .map(|c| c.text.trim().to_owned())
            .unwrap_or_default()
    };
    Some(Fault {
        code: text("faultcode"),
        message: text("faultstring"),
    })
}

impl Element {
    fn into_children(self) -> std::vec::IntoIter<Element> {
        self.children.into_iter()
    }
}
