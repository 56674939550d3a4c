package dev.protobench.server.soap;

import java.io.BufferedInputStream;
import java.io.ByteArrayOutputStream;
import java.io.FilterInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.Reader;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.Charset;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.xml.stream.Location;
import javax.xml.stream.XMLInputFactory;
import javax.xml.stream.XMLStreamConstants;
import javax.xml.stream.XMLStreamException;
import javax.xml.stream.XMLStreamReader;

/**
 * Reads a SOAP request body once with a StAX pull parser (the JDK's own, DTDs and external
 * entities off) before SAAJ builds its DOM: counts the elements and stops at the first one over
 * the limit; refuses a DOCTYPE, an entity reference, malformed XML and a root that is not the
 * SOAP 1.1 Envelope; and keeps the bytes it read so that the message factory can parse the same
 * body afterwards. Memory: the body's bytes plus the parser's small buffers; a refused body is
 * kept only up to the point of refusal. The shared factory only creates readers (the JDK's
 * factory makes a new reader with its own copy of the settings each time).
 */
public final class ElementLimit {

    /** The contract's limit: more elements than this (over the whole envelope) are refused. */
    public static final int MAX_ELEMENTS = 10_000;

    private static final String SOAP11_NS = "http://schemas.xmlsoap.org/soap/envelope/";

    private static final XMLInputFactory FACTORY = newFactory();

    /** encoding="..." in an XML declaration at the very start of the body. */
    private static final Pattern DECLARED_ENCODING =
            Pattern.compile("<\\?xml\\s[^>]*?encoding\\s*=\\s*[\"']([A-Za-z0-9._:-]{1,40})[\"']");

    private ElementLimit() {
    }

    private static XMLInputFactory newFactory() {
        XMLInputFactory f = XMLInputFactory.newDefaultFactory();
        f.setProperty(XMLInputFactory.SUPPORT_DTD, false);
        f.setProperty(XMLInputFactory.IS_SUPPORTING_EXTERNAL_ENTITIES, false);
        f.setProperty(XMLInputFactory.IS_REPLACING_ENTITY_REFERENCES, false);
        f.setProperty(XMLInputFactory.IS_COALESCING, false);
        return f;
    }

    /** Why a body was refused; the message names the problem for a soap:Client faultstring. */
    public static final class Refused extends Exception {
        private static final long serialVersionUID = 1L;

        public Refused(String message) {
            super(message, null, false, false);
        }
    }

    /**
     * Reads the whole body from {@code in}, checking it on the way.
     *
     * @param sizeHint the Content-Length when known (-1 otherwise), to size the buffer once
     * @param charset  the charset of the Content-Type, or null to detect it as XML does
     * @return the body's bytes, for the message factory
     * @throws Refused     more than {@code maxElements} elements, a DOCTYPE, or malformed XML
     * @throws IOException reading the request failed (e.g. the read timeout)
     */
    public static byte[] readChecked(InputStream in, long sizeHint, String charset, int maxElements)
            throws Refused, IOException {
        int initial = (int) Math.max(256, Math.min(sizeHint, 64L * 1024 * 1024));
        ByteArrayOutputStream copy = new ByteArrayOutputStream(sizeHint >= 0 ? initial : 8192);
        Tee tee = new Tee(in, copy);
        BufferedInputStream head = new BufferedInputStream(tee, 8192);
        Charset cs = charset(head, charset);
        // decoded here, strictly, rather than by the parser: the JDK's parser prints a line to
        // stderr for every malformed byte sequence it meets
        Reader text = new InputStreamReader(head, cs.newDecoder()
                .onMalformedInput(CodingErrorAction.REPORT)
                .onUnmappableCharacter(CodingErrorAction.REPORT));
        XMLStreamReader r = null;
        try {
            r = FACTORY.createXMLStreamReader(text);
            int elements = 0;
            while (r.hasNext()) {
                int event = r.next();
                if (event == XMLStreamConstants.START_ELEMENT) {
                    if (++elements > maxElements) {
                        throw new Refused("too many XML elements: more than " + maxElements);
                    }
                    if (elements == 1 && !(SOAP11_NS.equals(r.getNamespaceURI())
                            && "Envelope".equals(r.getLocalName()))) {
                        throw new Refused("not a SOAP 1.1 message: the root element must be Envelope in the "
                                + "namespace " + SOAP11_NS);
                    }
                } else if (event == XMLStreamConstants.DTD) {
                    throw new Refused("malformed request: a DOCTYPE (DTD) is not allowed");
                } else if (event == XMLStreamConstants.ENTITY_REFERENCE) {
                    throw new Refused("malformed XML: undeclared entity &" + r.getLocalName() + ";");
                }
            }
        } catch (XMLStreamException e) {
            if (tee.failure != null) {
                // reading the request itself failed (read timeout, client gone)
                throw tee.failure;
            }
            if (hasCause(e, CharacterCodingException.class)) {
                throw new Refused("malformed XML: the body is not valid " + cs.name() + " text");
            }
            throw new Refused("malformed XML: " + describe(e));
        } finally {
            if (r != null) {
                try {
                    r.close();
                } catch (XMLStreamException ignored) {
                    // closing a reader releases nothing we hold
                }
            }
        }
        // whatever follows the root element (trailing whitespace) belongs to the body too
        tee.transferTo(OutputStream.nullOutputStream());
        return copy.toByteArray();
    }

    /**
     * The body's charset, as XML over HTTP has it: the Content-Type's charset parameter when there
     * is one, else a byte order mark, else the XML declaration's encoding, else UTF-8. A UTF-8
     * byte order mark is skipped.
     */
    private static Charset charset(BufferedInputStream in, String declared) throws IOException, Refused {
        in.mark(512);
        byte[] head = in.readNBytes(512);
        in.reset();
        boolean utf8Bom = head.length >= 3 && (head[0] & 0xff) == 0xEF && (head[1] & 0xff) == 0xBB
                && (head[2] & 0xff) == 0xBF;
        String name = declared;
        if (name == null) {
            if (head.length >= 2 && ((head[0] & 0xff) == 0xFE && (head[1] & 0xff) == 0xFF
                    || (head[0] & 0xff) == 0xFF && (head[1] & 0xff) == 0xFE)) {
                name = "UTF-16";
            } else {
                Matcher m = DECLARED_ENCODING.matcher(new String(head, StandardCharsets.ISO_8859_1));
                name = m.lookingAt() ? m.group(1) : "UTF-8";
            }
        }
        Charset cs;
        try {
            cs = Charset.forName(name.strip());
        } catch (IllegalArgumentException e) {
            throw new Refused("unsupported character encoding: " + name.strip());
        }
        if (utf8Bom && cs.equals(StandardCharsets.UTF_8)) {
            in.skipNBytes(3);
        }
        return cs;
    }

    private static boolean hasCause(Throwable e, Class<? extends Throwable> type) {
        for (Throwable t = e; t != null; t = t.getCause() == t ? null : t.getCause()) {
            if (type.isInstance(t)) {
                return true;
            }
            if (t instanceof XMLStreamException x && type.isInstance(x.getNestedException())) {
                return true;
            }
        }
        return false;
    }

    /**
     * The parser's own description of the problem and where it is, without the "ParseError at
     * [row,col]" decoration of the JDK's messages.
     */
    static String describe(XMLStreamException e) {
        String m = e.getMessage() == null ? "" : e.getMessage();
        int at = m.indexOf("Message: ");
        String text = (at >= 0 ? m.substring(at + "Message: ".length()) : m).strip();
        if (text.isEmpty() || text.contains("Exception") || text.contains("java.")) {
            text = "not well-formed";
        }
        if (text.endsWith(".")) {
            text = text.substring(0, text.length() - 1);
        }
        if (text.length() > 200) {
            text = text.substring(0, 200);
        }
        Location loc = e.getLocation();
        if (loc != null && loc.getLineNumber() > 0) {
            text += " (line " + loc.getLineNumber() + ", column " + loc.getColumnNumber() + ")";
        }
        return text;
    }

    /** Copies every byte read through it, and remembers a failure of the request's stream. */
    private static final class Tee extends FilterInputStream {
        private final ByteArrayOutputStream copy;
        IOException failure;

        Tee(InputStream in, ByteArrayOutputStream copy) {
            super(in);
            this.copy = copy;
        }

        @Override
        public int read() throws IOException {
            byte[] one = new byte[1];
            int n = read(one, 0, 1);
            return n <= 0 ? -1 : one[0] & 0xff;
        }

        @Override
        public int read(byte[] b, int off, int len) throws IOException {
            int n;
            try {
                n = super.read(b, off, len);
            } catch (IOException e) {
                failure = e;
                throw e;
            }
            if (n > 0) {
                copy.write(b, off, n);
            }
            return n;
        }

        @Override
        public long skip(long n) throws IOException {
            // never skip: every byte must reach the copy
            byte[] buf = new byte[(int) Math.min(n, 8192)];
            int r = read(buf, 0, buf.length);
            return Math.max(r, 0);
        }

        @Override
        public boolean markSupported() {
            return false;
        }

        @Override
        public void close() {
            // the request's stream stays open: the rest of the body is still read from it
        }
    }
}
