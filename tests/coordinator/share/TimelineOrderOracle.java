// Walks an org.apache.kafka.timeline.TimelineHashMap after each script of puts and removes, as the group
// coordinator walks a group's members (tests/share/test_java_order.py compares share/java_order.TimelineKeys).
// Input: one script a line, "name op key op key ...", op "+" (put) or "-" (remove).
// Output: "name key key ...", the keys in the map's walk order.
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;

import org.apache.kafka.timeline.SnapshotRegistry;
import org.apache.kafka.timeline.TimelineHashMap;

public class TimelineOrderOracle {
    /** A SnapshotRegistry: its LogContext moved to common.utils.internals in Kafka 4.4. */
    static SnapshotRegistry registry() throws Exception {
        Class<?> logContext;
        try {
            logContext = Class.forName("org.apache.kafka.common.utils.internals.LogContext");
        } catch (ClassNotFoundException before44) {
            logContext = Class.forName("org.apache.kafka.common.utils.LogContext");
        }
        Object context = logContext.getConstructor().newInstance();
        return SnapshotRegistry.class.getConstructor(logContext).newInstance(context);
    }

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            String[] words = line.split(" ");
            TimelineHashMap<String, Integer> map = new TimelineHashMap<>(registry(), 0);
            for (int i = 1; i + 1 < words.length; i += 2) {
                if (words[i].equals("+")) {
                    map.put(words[i + 1], i);
                } else {
                    map.remove(words[i + 1]);
                }
            }
            StringBuilder out = new StringBuilder(words[0]);
            for (String key : map.keySet()) {
                out.append(' ').append(key);
            }
            System.out.println(out);
        }
    }
}
