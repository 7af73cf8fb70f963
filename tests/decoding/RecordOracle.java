// Reads record values with the released broker's own generated classes and prints every field as the
// object holds it (tests/decoding/test_kafka_reads_the_vectors.py compares them with our decoder's fields).
// Input: one value a line, "name class hex": the class's simple name under the group or share
// coordinator's generated package, the value's bytes (int16 version first) in hex.
// Output: one line each, "name {json}", "name UNSUPPORTED" (a version the class does not read) or
// "name ERROR message". JSON: field names as in the class, uuids as Uuid.toString, bytes as base64.
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.reflect.Constructor;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.Collection;
import java.util.HexFormat;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.protocol.ByteBufferAccessor;
import org.apache.kafka.common.protocol.Message;
import org.apache.kafka.common.protocol.Readable;

public class RecordOracle {
    static final String[] PACKAGES = {
        "org.apache.kafka.coordinator.group.generated.",
        "org.apache.kafka.coordinator.share.generated.",
    };

    static Class<?> find(String simpleName) throws ClassNotFoundException {
        for (String prefix : PACKAGES) {
            try {
                return Class.forName(prefix + simpleName);
            } catch (ClassNotFoundException ignored) {
                // the next package
            }
        }
        throw new ClassNotFoundException(simpleName);
    }

    static void quote(String text, StringBuilder out) {
        out.append('"');
        for (char c : text.toCharArray()) {
            if (c == '"' || c == '\\') {
                out.append('\\').append(c);
            } else if (c < 0x20 || c > 0x7e) {
                out.append(String.format("\\u%04x", (int) c));
            } else {
                out.append(c);
            }
        }
        out.append('"');
    }

    static void dump(Object value, StringBuilder out) throws IllegalAccessException {
        if (value == null) {
            out.append("null");
        } else if (value instanceof String text) {
            quote(text, out);
        } else if (value instanceof Number || value instanceof Boolean) {
            out.append(value);
        } else if (value instanceof Uuid uuid) {
            quote(uuid.toString(), out);
        } else if (value instanceof byte[] bytes) {
            quote(Base64.getEncoder().encodeToString(bytes), out);
        } else if (value instanceof ByteBuffer buffer) {
            byte[] bytes = new byte[buffer.remaining()];
            buffer.duplicate().get(bytes);
            quote(Base64.getEncoder().encodeToString(bytes), out);
        } else if (value instanceof Collection<?> items) {
            out.append('[');
            boolean first = true;
            for (Object item : items) {
                if (!first) {
                    out.append(',');
                }
                first = false;
                dump(item, out);
            }
            out.append(']');
        } else if (value instanceof Message) {
            out.append('{');
            boolean first = true;
            for (Field field : value.getClass().getDeclaredFields()) {
                String name = field.getName();
                // _unknownTaggedFields, and the next/prev links of keyed collections' elements.
                if (Modifier.isStatic(field.getModifiers()) || name.startsWith("_")
                        || name.equals("next") || name.equals("prev")) {
                    continue;
                }
                field.setAccessible(true);
                if (!first) {
                    out.append(',');
                }
                first = false;
                quote(name, out);
                out.append(':');
                dump(field.get(value), out);
            }
            out.append('}');
        } else {
            throw new IllegalArgumentException("no JSON for " + value.getClass());
        }
    }

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            String[] words = line.split(" ");
            StringBuilder out = new StringBuilder(words[0]).append(' ');
            try {
                Class<?> type = find(words[1]);
                ByteBuffer buffer = ByteBuffer.wrap(HexFormat.of().parseHex(words[2]));
                short version = buffer.getShort();
                short lowest = type.getField("LOWEST_SUPPORTED_VERSION").getShort(null);
                short highest = type.getField("HIGHEST_SUPPORTED_VERSION").getShort(null);
                if (version < lowest || version > highest) {
                    System.out.println(out.append("UNSUPPORTED"));
                    continue;
                }
                Constructor<?> read = type.getConstructor(Readable.class, short.class);
                Object message = read.newInstance(new ByteBufferAccessor(buffer), version);
                dump(message, out);
            } catch (Throwable error) {
                Throwable cause = error.getCause() != null ? error.getCause() : error;
                out.setLength(words[0].length() + 1);
                out.append("ERROR ").append(String.valueOf(cause).replace('\n', ' '));
            }
            System.out.println(out);
        }
    }
}
