//! The contract's XML form, driven by the same serde impls as its JSON form.
//!
//! Why not a general serde-XML crate: the contract fixes a small mapping
//! (every field an element named by its JSON name, repeated fields as repeated
//! elements, one namespace, fields in field-number order) and the parser must
//! refuse DTDs and undefined entities outright. Writing that mapping over serde
//! keeps one model for JSON and XML and keeps the parser's safety rules in one
//! place: [`parse`] builds a small element tree with depth and size limits, and
//! [`from_element`] / [`write_element`] map it to and from messages.

use std::collections::HashMap;
use std::fmt::{self, Write as _};
use std::sync::OnceLock;

use quick_xml::events::Event;
use quick_xml::name::ResolveResult;
use serde::de::{self, IntoDeserializer};
use serde::ser::{self, Serialize};

/// The deepest element nesting the parser accepts.
pub const MAX_DEPTH: usize = 64;

/// An XML problem: malformed input, refused constructs, or a mapping mismatch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct XmlError(String);

impl XmlError {
    fn new(msg: impl Into<String>) -> Self {
        XmlError(msg.into())
    }
}

impl fmt::Display for XmlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for XmlError {}

impl de::Error for XmlError {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        XmlError(msg.to_string())
    }
}

impl ser::Error for XmlError {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        XmlError(msg.to_string())
    }
}

/// One parsed element: its local name, namespace, child elements and text.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Element {
    /// Local name (no prefix).
    pub name: String,
    /// Namespace URI, if bound.
    pub namespace: Option<String>,
    /// Child elements in document order.
    pub children: Vec<Element>,
    /// Concatenated character data directly inside this element.
    pub text: String,
}

impl Element {
    /// `{namespace}name`, or `name` when unbound.
    pub fn qualified_name(&self) -> String {
        match &self.namespace {
            Some(ns) => format!("{{{ns}}}{}", self.name),
            None => self.name.clone(),
        }
    }

    /// The first child with this local name and namespace.
    pub fn child(&self, namespace: &str, name: &str) -> Option<&Element> {
        self.children
            .iter()
            .find(|c| c.name == name && c.namespace.as_deref() == Some(namespace))
    }
}

/// Parses a whole document into its root element.
///
/// Refuses DTDs (so no external entity or entity expansion can happen),
/// processing instructions, undefined entities, nesting deeper than
/// [`MAX_DEPTH`] and anything that is not well-formed.
pub fn parse(bytes: &[u8]) -> Result<Element, XmlError> {
    let text = std::str::from_utf8(bytes).map_err(|e| XmlError::new(format!("not UTF-8: {e}")))?;
    let mut reader = quick_xml::NsReader::from_str(text);
    reader.config_mut().check_end_names = true;
    let mut stack: Vec<Element> = Vec::new();
    let mut root: Option<Element> = None;
    loop {
        let position = reader.buffer_position();
        let (ns, event) = reader
            .read_resolved_event()
            .map_err(|e| XmlError::new(format!("malformed XML after byte {position}: {e}")))?;
        match event {
            Event::Start(start) | Event::Empty(start) if root.is_some() => {
                let _ = start;
                return Err(XmlError::new("content after the root element"));
            }
            Event::Start(ref start) | Event::Empty(ref start) => {
                if stack.len() >= MAX_DEPTH {
                    return Err(XmlError::new(format!("elements nested deeper than {MAX_DEPTH}")));
                }
                let namespace = match ns {
                    ResolveResult::Bound(ns) => Some(ns.as_ref().to_owned()),
                    ResolveResult::Unbound => None,
                    ResolveResult::Unknown(prefix) => {
                        return Err(XmlError::new(format!("undeclared namespace prefix {prefix:?}")));
                    }
                };
                let name: String = start.local_name().as_ref().to_owned();
                let element = Element {
                    name,
                    namespace,
                    ..Element::default()
                };
                if matches!(event, Event::Empty(_)) {
                    close(element, &mut stack, &mut root);
                } else {
                    stack.push(element);
                }
            }
            Event::End(_) => {
                let element = stack.pop().ok_or_else(|| XmlError::new("unbalanced end tag"))?;
                close(element, &mut stack, &mut root);
            }
            Event::Text(t) => push_text(&mut stack, &t.xml10_content())?,
            Event::CData(c) => push_text(&mut stack, &c.xml10_content())?,
            Event::GeneralRef(r) => {
                let ch = match r.resolve_char_ref() {
                    Ok(Some(ch)) => ch,
                    Ok(None) => match r.xml10_content().as_ref() {
                        "lt" => '<',
                        "gt" => '>',
                        "amp" => '&',
                        "apos" => '\'',
                        "quot" => '"',
                        other => return Err(XmlError::new(format!("undefined entity &{other};"))),
                    },
                    Err(e) => return Err(XmlError::new(format!("bad character reference: {e}"))),
                };
                push_text(&mut stack, ch.encode_utf8(&mut [0; 4]))?;
            }
            Event::DocType(_) => return Err(XmlError::new("DTDs (<!DOCTYPE>) are not allowed")),
            Event::PI(_) => return Err(XmlError::new("processing instructions are not allowed")),
            Event::Comment(_) | Event::Decl(_) => {}
            Event::Eof => break,
        }
    }
    if !stack.is_empty() {
        return Err(XmlError::new("document ends inside an element"));
    }
    root.ok_or_else(|| XmlError::new("no root element"))
}

fn close(element: Element, stack: &mut [Element], root: &mut Option<Element>) {
    match stack.last_mut() {
        Some(parent) => parent.children.push(element),
        None => *root = Some(element),
    }
}

fn push_text(stack: &mut [Element], text: &str) -> Result<(), XmlError> {
    match stack.last_mut() {
        Some(e) => e.text.push_str(text),
        None if text.trim().is_empty() => {}
        None => return Err(XmlError::new("text outside the root element")),
    }
    Ok(())
}

/// Escapes character data for element content.
pub fn escape_into(out: &mut String, text: &str) {
    let mut last = 0;
    for (i, b) in text.bytes().enumerate() {
        let rep = match b {
            b'&' => "&amp;",
            b'<' => "&lt;",
            b'>' => "&gt;",
            b'\r' => "&#13;",
            _ => continue,
        };
        out.push_str(&text[last..i]);
        out.push_str(rep);
        last = i + 1;
    }
    out.push_str(&text[last..]);
}

/// Writes `<element xmlns="urn:protobench:v1">fields</element>`.
pub fn write_element<T: Serialize + ?Sized>(out: &mut String, element: &str, value: &T) {
    out.push('<');
    out.push_str(element);
    out.push_str(" xmlns=\"");
    out.push_str(crate::SOAP_NAMESPACE);
    out.push_str("\">");
    value
        .serialize(ContentSer { out })
        .expect("contract messages always serialize to XML");
    out.push_str("</");
    out.push_str(element);
    out.push('>');
}

/// Decodes an element's children as a message (children must be in the
/// contract namespace; unknown children are errors).
pub fn from_element<'a, T: serde::Deserialize<'a>>(element: &'a Element) -> Result<T, XmlError> {
    T::deserialize(ElementDe(element))
}

/// Field numbers by JSON name, for messages whose serde order (oneofs last)
/// differs from field-number order.
fn reordered_fields(message: &str) -> Option<&'static HashMap<String, u32>> {
    static TABLE: OnceLock<HashMap<String, HashMap<String, u32>>> = OnceLock::new();
    TABLE
        .get_or_init(|| {
            let mut table = HashMap::new();
            for m in crate::pb::descriptor_pool().all_messages() {
                if m.oneofs().any(|o| !o.is_synthetic()) {
                    let fields = m.fields().map(|f| (f.json_name().to_owned(), f.number())).collect();
                    table.insert(m.full_name().to_owned(), fields);
                }
            }
            table
        })
        .get(message)
}

// ---------------------------------------------------------------- serializer

/// Serializes a message's fields as child elements.
struct ContentSer<'a> {
    out: &'a mut String,
}

/// Serializes one field value as zero or more elements named `name`.
struct FieldSer<'a> {
    out: &'a mut String,
    name: &'a str,
}

/// Field numbers by name, and the children buffered until they can be sorted.
type Reorder = (&'static HashMap<String, u32>, Vec<(u32, String)>);

struct StructSer<'a> {
    out: &'a mut String,
    /// Present when children must be reordered by field number.
    reorder: Option<Reorder>,
    /// Closing tag to write at the end, if any.
    close: Option<&'a str>,
    pending_key: Option<String>,
}

impl StructSer<'_> {
    fn field<T: Serialize + ?Sized>(&mut self, key: &str, value: &T) -> Result<(), XmlError> {
        match &mut self.reorder {
            Some((numbers, buffered)) => {
                let mut fragment = String::new();
                value.serialize(FieldSer {
                    out: &mut fragment,
                    name: key,
                })?;
                buffered.push((numbers.get(key).copied().unwrap_or(u32::MAX), fragment));
                Ok(())
            }
            None => value.serialize(FieldSer {
                out: self.out,
                name: key,
            }),
        }
    }

    fn finish(self) -> Result<(), XmlError> {
        if let Some((_, mut buffered)) = self.reorder {
            buffered.sort_by_key(|(n, _)| *n);
            for (_, fragment) in buffered {
                self.out.push_str(&fragment);
            }
        }
        if let Some(name) = self.close {
            self.out.push_str("</");
            self.out.push_str(name);
            self.out.push('>');
        }
        Ok(())
    }
}

impl ser::SerializeStruct for StructSer<'_> {
    type Ok = ();
    type Error = XmlError;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, key: &'static str, value: &T) -> Result<(), XmlError> {
        self.field(key, value)
    }
    fn end(self) -> Result<(), XmlError> {
        self.finish()
    }
}

impl ser::SerializeMap for StructSer<'_> {
    type Ok = ();
    type Error = XmlError;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), XmlError> {
        self.pending_key = Some(key.serialize(KeySer)?);
        Ok(())
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), XmlError> {
        let key = self
            .pending_key
            .take()
            .ok_or_else(|| XmlError::new("map value without key"))?;
        self.field(&key, value)
    }
    fn end(self) -> Result<(), XmlError> {
        self.finish()
    }
}

struct SeqSer<'a> {
    out: &'a mut String,
    name: &'a str,
}

impl ser::SerializeSeq for SeqSer<'_> {
    type Ok = ();
    type Error = XmlError;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), XmlError> {
        value.serialize(FieldSer {
            out: self.out,
            name: self.name,
        })
    }
    fn end(self) -> Result<(), XmlError> {
        Ok(())
    }
}

fn unsupported<T>(what: &str) -> Result<T, XmlError> {
    Err(XmlError::new(format!("{what} has no contract XML form")))
}

macro_rules! scalar_methods {
    ($($method:ident: $ty:ty),*) => {
        $(fn $method(self, v: $ty) -> Result<(), XmlError> { self.scalar(format_args!("{v}")) })*
    };
}

impl FieldSer<'_> {
    fn scalar(self, v: fmt::Arguments<'_>) -> Result<(), XmlError> {
        let _ = write!(self.out, "<{}>{}</{}>", self.name, v, self.name);
        Ok(())
    }
    fn float(self, v: f64, s: fmt::Arguments<'_>) -> Result<(), XmlError> {
        if v.is_nan() {
            self.scalar(format_args!("NaN"))
        } else if v.is_infinite() {
            self.scalar(format_args!("{}", if v > 0.0 { "INF" } else { "-INF" }))
        } else {
            self.scalar(s)
        }
    }
}

impl<'a> ser::Serializer for FieldSer<'a> {
    type Ok = ();
    type Error = XmlError;
    type SerializeSeq = SeqSer<'a>;
    type SerializeTuple = ser::Impossible<(), XmlError>;
    type SerializeTupleStruct = ser::Impossible<(), XmlError>;
    type SerializeTupleVariant = ser::Impossible<(), XmlError>;
    type SerializeMap = StructSer<'a>;
    type SerializeStruct = StructSer<'a>;
    type SerializeStructVariant = ser::Impossible<(), XmlError>;

    scalar_methods!(serialize_bool: bool, serialize_i8: i8, serialize_i16: i16, serialize_i32: i32,
        serialize_i64: i64, serialize_u8: u8, serialize_u16: u16, serialize_u32: u32, serialize_u64: u64);

    fn serialize_f32(self, v: f32) -> Result<(), XmlError> {
        self.float(f64::from(v), format_args!("{v}"))
    }
    fn serialize_f64(self, v: f64) -> Result<(), XmlError> {
        self.float(v, format_args!("{v}"))
    }
    fn serialize_char(self, v: char) -> Result<(), XmlError> {
        self.serialize_str(v.encode_utf8(&mut [0; 4]))
    }
    fn serialize_str(self, v: &str) -> Result<(), XmlError> {
        self.out.push('<');
        self.out.push_str(self.name);
        self.out.push('>');
        escape_into(self.out, v);
        self.out.push_str("</");
        self.out.push_str(self.name);
        self.out.push('>');
        Ok(())
    }
    fn serialize_bytes(self, _: &[u8]) -> Result<(), XmlError> {
        unsupported("raw bytes (the contract base64-encodes them)")
    }
    fn serialize_none(self) -> Result<(), XmlError> {
        Ok(())
    }
    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<(), XmlError> {
        value.serialize(self)
    }
    fn serialize_unit(self) -> Result<(), XmlError> {
        let _ = write!(self.out, "<{}/>", self.name);
        Ok(())
    }
    fn serialize_unit_struct(self, _: &'static str) -> Result<(), XmlError> {
        self.serialize_unit()
    }
    fn serialize_unit_variant(self, _: &'static str, _: u32, variant: &'static str) -> Result<(), XmlError> {
        self.serialize_str(variant)
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(self, _: &'static str, value: &T) -> Result<(), XmlError> {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<(), XmlError> {
        unsupported("an enum with data")
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<SeqSer<'a>, XmlError> {
        Ok(SeqSer {
            out: self.out,
            name: self.name,
        })
    }
    fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple, XmlError> {
        unsupported("a tuple")
    }
    fn serialize_tuple_struct(self, _: &'static str, _: usize) -> Result<Self::SerializeTupleStruct, XmlError> {
        unsupported("a tuple struct")
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant, XmlError> {
        unsupported("a tuple variant")
    }
    fn serialize_map(self, _: Option<usize>) -> Result<StructSer<'a>, XmlError> {
        self.out.push('<');
        self.out.push_str(self.name);
        self.out.push('>');
        Ok(StructSer {
            out: self.out,
            reorder: None,
            close: Some(self.name),
            pending_key: None,
        })
    }
    fn serialize_struct(self, message: &'static str, _: usize) -> Result<StructSer<'a>, XmlError> {
        self.out.push('<');
        self.out.push_str(self.name);
        self.out.push('>');
        let reorder = reordered_fields(message).map(|n| (n, Vec::new()));
        Ok(StructSer {
            out: self.out,
            reorder,
            close: Some(self.name),
            pending_key: None,
        })
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant, XmlError> {
        unsupported("a struct variant")
    }
}

impl<'a> ser::Serializer for ContentSer<'a> {
    type Ok = ();
    type Error = XmlError;
    type SerializeSeq = ser::Impossible<(), XmlError>;
    type SerializeTuple = ser::Impossible<(), XmlError>;
    type SerializeTupleStruct = ser::Impossible<(), XmlError>;
    type SerializeTupleVariant = ser::Impossible<(), XmlError>;
    type SerializeMap = StructSer<'a>;
    type SerializeStruct = StructSer<'a>;
    type SerializeStructVariant = ser::Impossible<(), XmlError>;

    fn serialize_map(self, _: Option<usize>) -> Result<StructSer<'a>, XmlError> {
        Ok(StructSer {
            out: self.out,
            reorder: None,
            close: None,
            pending_key: None,
        })
    }
    fn serialize_struct(self, message: &'static str, _: usize) -> Result<StructSer<'a>, XmlError> {
        let reorder = reordered_fields(message).map(|n| (n, Vec::new()));
        Ok(StructSer {
            out: self.out,
            reorder,
            close: None,
            pending_key: None,
        })
    }
    fn serialize_bool(self, _: bool) -> Result<(), XmlError> {
        unsupported("a bare scalar")
    }
    fn serialize_i8(self, _: i8) -> Result<(), XmlError> {
        unsupported("a bare scalar")
    }
    fn serialize_i16(self, _: i16) -> Result<(), XmlError> {
        unsupported("a bare scalar")
    }
    fn serialize_i32(self, _: i32) -> Result<(), XmlError> {
        unsupported("a bare scalar")
    }
    fn serialize_i64(self, _: i64) -> Result<(), XmlError> {
        unsupported("a bare scalar")
    }
    fn serialize_u8(self, _: u8) -> Result<(), XmlError> {
        unsupported("a bare scalar")
    }
    fn serialize_u16(self, _: u16) -> Result<(), XmlError> {
        unsupported("a bare scalar")
    }
    fn serialize_u32(self, _: u32) -> Result<(), XmlError> {
        unsupported("a bare scalar")
    }
    fn serialize_u64(self, _: u64) -> Result<(), XmlError> {
        unsupported("a bare scalar")
    }
    fn serialize_f32(self, _: f32) -> Result<(), XmlError> {
        unsupported("a bare scalar")
    }
    fn serialize_f64(self, _: f64) -> Result<(), XmlError> {
        unsupported("a bare scalar")
    }
    fn serialize_char(self, _: char) -> Result<(), XmlError> {
        unsupported("a bare scalar")
    }
    fn serialize_str(self, _: &str) -> Result<(), XmlError> {
        unsupported("a bare scalar")
    }
    fn serialize_bytes(self, _: &[u8]) -> Result<(), XmlError> {
        unsupported("a bare scalar")
    }
    fn serialize_none(self) -> Result<(), XmlError> {
        Ok(())
    }
    fn serialize_some<T: Serialize + ?Sized>(self, v: &T) -> Result<(), XmlError> {
        v.serialize(self)
    }
    fn serialize_unit(self) -> Result<(), XmlError> {
        Ok(())
    }
    fn serialize_unit_struct(self, _: &'static str) -> Result<(), XmlError> {
        Ok(())
    }
    fn serialize_unit_variant(self, _: &'static str, _: u32, _: &'static str) -> Result<(), XmlError> {
        unsupported("a bare enum")
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(self, _: &'static str, v: &T) -> Result<(), XmlError> {
        v.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<(), XmlError> {
        unsupported("an enum with data")
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq, XmlError> {
        unsupported("a bare list")
    }
    fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple, XmlError> {
        unsupported("a tuple")
    }
    fn serialize_tuple_struct(self, _: &'static str, _: usize) -> Result<Self::SerializeTupleStruct, XmlError> {
        unsupported("a tuple struct")
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant, XmlError> {
        unsupported("a tuple variant")
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant, XmlError> {
        unsupported("a struct variant")
    }
}

/// Captures a map key, which must be a string.
struct KeySer;

impl ser::Serializer for KeySer {
    type Ok = String;
    type Error = XmlError;
    type SerializeSeq = ser::Impossible<String, XmlError>;
    type SerializeTuple = ser::Impossible<String, XmlError>;
    type SerializeTupleStruct = ser::Impossible<String, XmlError>;
    type SerializeTupleVariant = ser::Impossible<String, XmlError>;
    type SerializeMap = ser::Impossible<String, XmlError>;
    type SerializeStruct = ser::Impossible<String, XmlError>;
    type SerializeStructVariant = ser::Impossible<String, XmlError>;
    fn serialize_str(self, v: &str) -> Result<String, XmlError> {
        Ok(v.to_owned())
    }
    fn serialize_bool(self, _: bool) -> Result<String, XmlError> {
        unsupported("a non-string key")
    }
    fn serialize_i8(self, _: i8) -> Result<String, XmlError> {
        unsupported("a non-string key")
    }
    fn serialize_i16(self, _: i16) -> Result<String, XmlError> {
        unsupported("a non-string key")
    }
    fn serialize_i32(self, _: i32) -> Result<String, XmlError> {
        unsupported("a non-string key")
    }
    fn serialize_i64(self, _: i64) -> Result<String, XmlError> {
        unsupported("a non-string key")
    }
    fn serialize_u8(self, _: u8) -> Result<String, XmlError> {
        unsupported("a non-string key")
    }
    fn serialize_u16(self, _: u16) -> Result<String, XmlError> {
        unsupported("a non-string key")
    }
    fn serialize_u32(self, _: u32) -> Result<String, XmlError> {
        unsupported("a non-string key")
    }
    fn serialize_u64(self, _: u64) -> Result<String, XmlError> {
        unsupported("a non-string key")
    }
    fn serialize_f32(self, _: f32) -> Result<String, XmlError> {
        unsupported("a non-string key")
    }
    fn serialize_f64(self, _: f64) -> Result<String, XmlError> {
        unsupported("a non-string key")
    }
    fn serialize_char(self, v: char) -> Result<String, XmlError> {
        Ok(v.to_string())
    }
    fn serialize_bytes(self, _: &[u8]) -> Result<String, XmlError> {
        unsupported("a non-string key")
    }
    fn serialize_none(self) -> Result<String, XmlError> {
        unsupported("a non-string key")
    }
    fn serialize_some<T: Serialize + ?Sized>(self, v: &T) -> Result<String, XmlError> {
        v.serialize(self)
    }
    fn serialize_unit(self) -> Result<String, XmlError> {
        unsupported("a non-string key")
    }
    fn serialize_unit_struct(self, _: &'static str) -> Result<String, XmlError> {
        unsupported("a non-string key")
    }
    fn serialize_unit_variant(self, _: &'static str, _: u32, v: &'static str) -> Result<String, XmlError> {
        Ok(v.to_owned())
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(self, _: &'static str, v: &T) -> Result<String, XmlError> {
        v.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<String, XmlError> {
        unsupported("a non-string key")
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq, XmlError> {
        unsupported("a non-string key")
    }
    fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple, XmlError> {
        unsupported("a non-string key")
    }
    fn serialize_tuple_struct(self, _: &'static str, _: usize) -> Result<Self::SerializeTupleStruct, XmlError> {
        unsupported("a non-string key")
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant, XmlError> {
        unsupported("a non-string key")
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap, XmlError> {
        unsupported("a non-string key")
    }
    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Self::SerializeStruct, XmlError> {
        unsupported("a non-string key")
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant, XmlError> {
        unsupported("a non-string key")
    }
}

// -------------------------------------------------------------- deserializer

/// Presents an element as a message (map of fields) or a scalar (its text).
#[derive(Clone, Copy)]
struct ElementDe<'a>(&'a Element);

/// Presents the repeated elements of one field.
struct SeqDe<'a> {
    items: std::vec::IntoIter<&'a Element>,
}

/// Presents an element's children grouped by name, each group one field.
struct FieldsDe<'a> {
    groups: std::vec::IntoIter<(&'a str, Vec<&'a Element>)>,
    value: Option<Vec<&'a Element>>,
}

impl<'a> FieldsDe<'a> {
    fn new(element: &'a Element) -> Result<Self, XmlError> {
        let mut groups: Vec<(&'a str, Vec<&'a Element>)> = Vec::new();
        for child in &element.children {
            if child.namespace.as_deref() != Some(crate::SOAP_NAMESPACE) {
                return Err(XmlError::new(format!(
                    "element {} inside {} is not in namespace {}",
                    child.qualified_name(),
                    element.name,
                    crate::SOAP_NAMESPACE
                )));
            }
            match groups.iter_mut().find(|(name, _)| *name == child.name) {
                Some((_, list)) => list.push(child),
                None => groups.push((child.name.as_str(), vec![child])),
            }
        }
        if !element.children.is_empty() && !element.text.trim().is_empty() {
            return Err(XmlError::new(format!(
                "element {} mixes text and elements",
                element.name
            )));
        }
        Ok(FieldsDe {
            groups: groups.into_iter(),
            value: None,
        })
    }
}

impl<'de> de::MapAccess<'de> for FieldsDe<'de> {
    type Error = XmlError;
    fn next_key_seed<K: de::DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, XmlError> {
        match self.groups.next() {
            Some((name, list)) => {
                self.value = Some(list);
                seed.deserialize(de::value::BorrowedStrDeserializer::new(name))
                    .map(Some)
            }
            None => Ok(None),
        }
    }
    fn next_value_seed<V: de::DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, XmlError> {
        let list = self.value.take().ok_or_else(|| XmlError::new("value without key"))?;
        if list.len() == 1 {
            seed.deserialize(ElementDe(list[0]))
        } else {
            seed.deserialize(SeqDe {
                items: list.into_iter(),
            })
        }
    }
}

impl<'de> de::SeqAccess<'de> for SeqDe<'de> {
    type Error = XmlError;
    fn next_element_seed<T: de::DeserializeSeed<'de>>(&mut self, seed: T) -> Result<Option<T::Value>, XmlError> {
        self.items.next().map(|e| seed.deserialize(ElementDe(e))).transpose()
    }
}

impl<'de> de::Deserializer<'de> for SeqDe<'de> {
    type Error = XmlError;
    fn deserialize_any<V: de::Visitor<'de>>(self, visitor: V) -> Result<V::Value, XmlError> {
        visitor.visit_seq(self)
    }
    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf option unit unit_struct newtype_struct seq tuple
        tuple_struct map struct enum identifier ignored_any
    }
}

impl<'a> ElementDe<'a> {
    fn scalar_text(&self) -> Result<&'a str, XmlError> {
        if !self.0.children.is_empty() {
            return Err(XmlError::new(format!(
                "element {} holds elements where a value was expected",
                self.0.name
            )));
        }
        Ok(&self.0.text)
    }
}

macro_rules! parse_scalar {
    ($($method:ident => $visit:ident: $ty:ty),*) => {
        $(fn $method<V: de::Visitor<'de>>(self, visitor: V) -> Result<V::Value, XmlError> {
            let text = self.scalar_text()?.trim();
            let v: $ty = text.parse().map_err(|_| XmlError::new(format!(
                "element {} holds {:?}, expected {}", self.0.name, text, stringify!($ty))))?;
            visitor.$visit(v)
        })*
    };
}

impl<'de> de::Deserializer<'de> for ElementDe<'de> {
    type Error = XmlError;

    fn deserialize_any<V: de::Visitor<'de>>(self, visitor: V) -> Result<V::Value, XmlError> {
        if self.0.children.is_empty() {
            visitor.visit_borrowed_str(&self.0.text)
        } else {
            visitor.visit_map(FieldsDe::new(self.0)?)
        }
    }
    fn deserialize_bool<V: de::Visitor<'de>>(self, visitor: V) -> Result<V::Value, XmlError> {
        match self.scalar_text()?.trim() {
            "true" | "1" => visitor.visit_bool(true),
            "false" | "0" => visitor.visit_bool(false),
            other => Err(XmlError::new(format!(
                "element {} holds {other:?}, expected true or false",
                self.0.name
            ))),
        }
    }
    parse_scalar!(deserialize_i8 => visit_i8: i8, deserialize_i16 => visit_i16: i16,
        deserialize_i32 => visit_i32: i32, deserialize_i64 => visit_i64: i64,
        deserialize_u8 => visit_u8: u8, deserialize_u16 => visit_u16: u16,
        deserialize_u32 => visit_u32: u32, deserialize_u64 => visit_u64: u64);
    fn deserialize_f32<V: de::Visitor<'de>>(self, visitor: V) -> Result<V::Value, XmlError> {
        self.deserialize_f64(visitor)
    }
    fn deserialize_f64<V: de::Visitor<'de>>(self, visitor: V) -> Result<V::Value, XmlError> {
        let text = self.scalar_text()?.trim();
        let v = match text {
            "INF" => f64::INFINITY,
            "-INF" => f64::NEG_INFINITY,
            other => other
                .parse()
                .map_err(|_| XmlError::new(format!("element {} holds {other:?}, expected a number", self.0.name)))?,
        };
        visitor.visit_f64(v)
    }
    fn deserialize_str<V: de::Visitor<'de>>(self, visitor: V) -> Result<V::Value, XmlError> {
        visitor.visit_borrowed_str(self.scalar_text()?)
    }
    fn deserialize_string<V: de::Visitor<'de>>(self, visitor: V) -> Result<V::Value, XmlError> {
        self.deserialize_str(visitor)
    }
    fn deserialize_option<V: de::Visitor<'de>>(self, visitor: V) -> Result<V::Value, XmlError> {
        visitor.visit_some(self)
    }
    fn deserialize_seq<V: de::Visitor<'de>>(self, visitor: V) -> Result<V::Value, XmlError> {
        visitor.visit_seq(SeqDe {
            items: vec![self.0].into_iter(),
        })
    }
    fn deserialize_map<V: de::Visitor<'de>>(self, visitor: V) -> Result<V::Value, XmlError> {
        visitor.visit_map(FieldsDe::new(self.0)?)
    }
    fn deserialize_struct<V: de::Visitor<'de>>(
        self,
        _: &'static str,
        _: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, XmlError> {
        if !self.0.text.trim().is_empty() && self.0.children.is_empty() {
            return Err(XmlError::new(format!(
                "element {} holds text where fields were expected",
                self.0.name
            )));
        }
        visitor.visit_map(FieldsDe::new(self.0)?)
    }
    fn deserialize_enum<V: de::Visitor<'de>>(
        self,
        _: &'static str,
        _: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, XmlError> {
        visitor.visit_enum(self.scalar_text()?.trim().into_deserializer())
    }
    fn deserialize_newtype_struct<V: de::Visitor<'de>>(
        self,
        _: &'static str,
        visitor: V,
    ) -> Result<V::Value, XmlError> {
        visitor.visit_newtype_struct(self)
    }
    fn deserialize_unit<V: de::Visitor<'de>>(self, visitor: V) -> Result<V::Value, XmlError> {
        visitor.visit_unit()
    }
    fn deserialize_ignored_any<V: de::Visitor<'de>>(self, visitor: V) -> Result<V::Value, XmlError> {
        visitor.visit_unit()
    }
    serde::forward_to_deserialize_any! {
        i128 u128 char bytes byte_buf unit_struct tuple tuple_struct identifier
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_doctype_and_external_entities() {
        let xxe = br#"<?xml version="1.0"?><!DOCTYPE r [<!ENTITY x SYSTEM "file:///etc/passwd">]><r>&x;</r>"#;
        let err = parse(xxe).unwrap_err();
        assert!(err.to_string().contains("DTD"), "{err}");
    }

    #[test]
    fn refuses_undefined_entity_without_dtd() {
        let err = parse(b"<r>&x;</r>").unwrap_err();
        assert_eq!(err.to_string(), "undefined entity &x;");
    }

    #[test]
    fn resolves_predefined_and_character_references() {
        let e = parse(b"<r>a&amp;b&#x263A;&#65;&lt;</r>").unwrap();
        assert_eq!(e.text, "a&b\u{263A}A<");
    }

    #[test]
    fn limits_nesting_depth() {
        let deep = "<a>".repeat(MAX_DEPTH + 1) + &"</a>".repeat(MAX_DEPTH + 1);
        assert!(parse(deep.as_bytes()).unwrap_err().to_string().contains("deeper"));
    }

    #[test]
    fn rejects_mismatched_end_tags_and_trailing_elements() {
        assert!(parse(b"<a><b></a></b>").is_err());
        assert!(parse(b"<a/><b/>").is_err());
        assert!(parse(b"<a>").is_err());
    }

    #[test]
    fn resolves_prefixed_namespaces() {
        let e = parse(br#"<p:a xmlns:p="urn:x"><p:b>1</p:b></p:a>"#).unwrap();
        assert_eq!(e.qualified_name(), "{urn:x}a");
        assert_eq!(e.child("urn:x", "b").unwrap().text, "1");
    }

    #[test]
    fn escapes_markup_characters() {
        let mut out = String::new();
        escape_into(&mut out, "a<b>&c\r");
        assert_eq!(out, "a&lt;b&gt;&amp;c&#13;");
    }
}
