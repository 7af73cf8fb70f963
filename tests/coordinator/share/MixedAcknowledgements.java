// A share consumer that acknowledges each record by its offset, for tests/share/test_live_share_groups.py:
// the first record of each partition is released (it stays Available, so the share-partition's start
// offset cannot move past it), an odd offset is rejected (Archived), any other accepted (Acknowledged).
// The console share consumer gives every record the same answer, and records answered at the head of a
// partition fall before the start offset: these stay in the share-partition's state batches.
//
// Arguments: bootstrap servers, group, topic, how many distinct records to take, seconds to wait at most.
// Prints one line a delivery: Partition:P, Offset:O, Delivery:D and Ack:TYPE, tab-separated.

import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Properties;
import java.util.Set;

import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

public class MixedAcknowledgements {
    public static void main(String[] args) {
        Properties settings = new Properties();
        settings.put("bootstrap.servers", args[0]);
        settings.put("group.id", args[1]);
        settings.put("share.acknowledgement.mode", "explicit");
        settings.put("key.deserializer", ByteArrayDeserializer.class.getName());
        settings.put("value.deserializer", ByteArrayDeserializer.class.getName());
        int wanted = Integer.parseInt(args[3]);
        long deadline = System.currentTimeMillis() + 1000L * Long.parseLong(args[4]);
        Set<String> taken = new HashSet<>();
        try (KafkaShareConsumer<byte[], byte[]> consumer = new KafkaShareConsumer<>(settings)) {
            consumer.subscribe(List.of(args[2]));
            while (taken.size() < wanted) {
                if (System.currentTimeMillis() > deadline) {
                    System.err.println("took " + taken.size() + " of " + wanted + " records in time");
                    System.exit(1);
                }
                for (ConsumerRecord<byte[], byte[]> record : consumer.poll(Duration.ofMillis(500))) {
                    AcknowledgeType answer = record.offset() == 0 ? AcknowledgeType.RELEASE
                        : record.offset() % 2 == 1 ? AcknowledgeType.REJECT : AcknowledgeType.ACCEPT;
                    consumer.acknowledge(record, answer);
                    taken.add(record.partition() + ":" + record.offset());
                    System.out.println("Partition:" + record.partition() + "\tOffset:" + record.offset()
                        + "\tDelivery:" + record.deliveryCount().orElse((short) -1) + "\tAck:" + answer.name());
                }
                consumer.commitSync();
            }
        }
    }
}
