// A YARN cluster in one JVM (Hadoop's MiniYARNCluster: a ResourceManager and one NodeManager), for
// tests/runs/test_cluster.py. Run as a single source file: java -cp ".jars/yarn/*:<log4j jars>"
// MiniYarn.java CONF_DIR MEMORY_MB [CONTAINER_JVM_FLAGS]. It writes CONF_DIR/yarn-site.xml and core-site.xml for spark-submit
// (HADOOP_CONF_DIR), then CONF_DIR/ready, and runs until it is killed. Every service binds to 127.0.0.1.
import java.io.File;
import java.io.FileOutputStream;
import java.io.OutputStream;
import java.nio.file.Files;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.yarn.conf.YarnConfiguration;
import org.apache.hadoop.yarn.server.MiniYARNCluster;

public class MiniYarn {
  public static void main(String[] args) throws Exception {
    File confDir = new File(args[0]);
    int memory = Integer.parseInt(args[1]);
    YarnConfiguration conf = new YarnConfiguration();
    conf.set("fs.defaultFS", "file:///");
    conf.set("yarn.resourcemanager.bind-host", "127.0.0.1");
    conf.set("yarn.nodemanager.bind-host", "127.0.0.1");
    conf.set("yarn.timeline-service.bind-host", "127.0.0.1");
    conf.set("yarn.resourcemanager.scheduler.class",
        "org.apache.hadoop.yarn.server.resourcemanager.scheduler.fifo.FifoScheduler");
    conf.setInt("yarn.nodemanager.resource.memory-mb", memory);
    conf.setInt("yarn.nodemanager.resource.cpu-vcores", 4);
    conf.setInt("yarn.scheduler.minimum-allocation-mb", 256);
    conf.setInt("yarn.scheduler.maximum-allocation-mb", memory);
    // containers share this machine with the test: no memory policing, no disk-full refusal
    conf.setBoolean("yarn.nodemanager.vmem-check-enabled", false);
    conf.setBoolean("yarn.nodemanager.pmem-check-enabled", false);
    conf.set("yarn.nodemanager.disk-health-checker.max-disk-utilization-per-disk-percentage", "100");
    // the containers' JVMs (the application master, the executors) get the flags the NodeManager was
    // started with for them: args[2], the flags of the test's short-lived JVMs
    if (args.length > 2) {
      conf.set("yarn.nodemanager.admin-env", "MALLOC_ARENA_MAX=$MALLOC_ARENA_MAX,JAVA_TOOL_OPTIONS=" + args[2]);
    }
    MiniYARNCluster cluster = new MiniYARNCluster("offset-audit", 1, 1, 1);
    cluster.init(conf);
    cluster.start();
    long deadline = System.currentTimeMillis() + 120_000;
    while (cluster.getResourceManager().getRMContext().getRMNodes().isEmpty()) {
      if (System.currentTimeMillis() > deadline) {
        throw new IllegalStateException("no NodeManager registered with the ResourceManager in 120 s");
      }
      Thread.sleep(200);
    }
    Configuration written = cluster.getConfig();
    try (OutputStream out = new FileOutputStream(new File(confDir, "yarn-site.xml"))) {
      written.writeXml(out);
    }
    Configuration core = new Configuration(false);
    core.set("fs.defaultFS", "file:///");
    try (OutputStream out = new FileOutputStream(new File(confDir, "core-site.xml"))) {
      core.writeXml(out);
    }
    Files.writeString(new File(confDir, "ready").toPath(), written.get("yarn.resourcemanager.address"));
    Thread.sleep(Long.MAX_VALUE);
  }
}
