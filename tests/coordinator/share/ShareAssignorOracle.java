// Runs a released broker's share-group SimpleAssignor on scenarios read from stdin, for
// tests/share/test_balanced_assignor.py. Compiled and run by the test against the kafka-group-coordinator
// jars `make kafka` fetched; it only calls the assignor's public API.
//
// Input, one scenario per block:
//   scenario NAME HOMOGENEOUS|HETEROGENEOUS
//   topic TOPIC_ID PARTITIONS
//   allowed TOPIC_ID P,P,... or -    (optional; any allowed line makes the allowed map present)
//   member MEMBER_ID SUBS OLD        (SUBS: TOPIC_ID,TOPIC_ID or -; OLD: TOPIC_ID:P.P;TOPIC_ID:P or -)
//   end
// Members are put in the order given, subscriptions and old partitions too, as the test's model assumes.
// Output: "NAME MEMBER TOPIC_ID:P ..." per member, partitions sorted; "NAME ! EXCEPTION" where the
// assignor throws.

import org.apache.kafka.common.Uuid;
import org.apache.kafka.coordinator.group.api.assignor.GroupAssignment;
import org.apache.kafka.coordinator.group.api.assignor.MemberAssignment;
import org.apache.kafka.coordinator.group.api.assignor.SubscribedTopicDescriber;
import org.apache.kafka.coordinator.group.api.assignor.SubscriptionType;
import org.apache.kafka.coordinator.group.assignor.SimpleAssignor;
import org.apache.kafka.coordinator.group.modern.Assignment;
import org.apache.kafka.coordinator.group.modern.GroupSpecImpl;
import org.apache.kafka.coordinator.group.modern.MemberSubscriptionAndAssignmentImpl;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;

public class ShareAssignorOracle {
    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, "UTF-8"));
        String name = null;
        SubscriptionType type = null;
        Map<Uuid, Integer> partitions = new HashMap<>();
        Map<Uuid, Set<Integer>> allowed = null;
        Map<String, MemberSubscriptionAndAssignmentImpl> members = new HashMap<>();
        List<String> memberIds = new ArrayList<>();
        String line;
        while ((line = in.readLine()) != null) {
            String[] f = line.trim().split(" ");
            switch (f[0]) {
                case "scenario":
                    name = f[1];
                    type = SubscriptionType.valueOf(f[2]);
                    partitions = new HashMap<>();
                    allowed = null;
                    members = new HashMap<>();
                    memberIds = new ArrayList<>();
                    break;
                case "topic":
                    partitions.put(Uuid.fromString(f[1]), Integer.parseInt(f[2]));
                    break;
                case "allowed":
                    if (allowed == null) allowed = new HashMap<>();
                    Set<Integer> ok = new HashSet<>();
                    if (!f[2].equals("-")) for (String p : f[2].split(",")) ok.add(Integer.parseInt(p));
                    allowed.put(Uuid.fromString(f[1]), ok);
                    break;
                case "member":
                    Set<Uuid> subs = new LinkedHashSet<>();
                    if (!f[2].equals("-")) for (String t : f[2].split(",")) subs.add(Uuid.fromString(t));
                    Map<Uuid, Set<Integer>> old = new HashMap<>();
                    if (!f[3].equals("-")) {
                        for (String held : f[3].split(";")) {
                            String[] tp = held.split(":");
                            List<Integer> ps = new ArrayList<>();
                            for (String p : tp[1].split("\\.")) ps.add(Integer.parseInt(p));
                            old.put(Uuid.fromString(tp[0]), new HashSet<>(ps));
                        }
                    }
                    members.put(f[1], new MemberSubscriptionAndAssignmentImpl(
                        Optional.empty(), Optional.empty(), subs, new Assignment(old)));
                    memberIds.add(f[1]);
                    break;
                case "end":
                    Map<Uuid, Integer> counts = partitions;
                    SubscribedTopicDescriber describer = new SubscribedTopicDescriber() {
                        public int numPartitions(Uuid topicId) { return counts.getOrDefault(topicId, -1); }
                        public Set<String> racksForPartition(Uuid topicId, int partition) { return Set.of(); }
                    };
                    GroupSpecImpl spec = new GroupSpecImpl(
                        members, type, new HashMap<>(), Optional.ofNullable(allowed));
                    GroupAssignment result;
                    try {
                        result = new SimpleAssignor().assign(spec, describer);
                    } catch (RuntimeException e) {
                        System.out.println(name + " ! " + e.getClass().getSimpleName());
                        break;
                    }
                    for (String member : memberIds) {
                        MemberAssignment assigned = result.members().get(member);
                        TreeSet<String> held = new TreeSet<>();
                        if (assigned != null) {
                            assigned.partitions().forEach((topic, ps) -> ps.forEach(p -> held.add(topic + ":" + p)));
                        }
                        System.out.println(name + " " + member + (held.isEmpty() ? "" : " " + String.join(" ", held)));
                    }
                    break;
                default:
                    break;
            }
        }
    }
}
