package org.stratatrace.yarncluster;

import java.io.File;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.lang.management.ManagementFactory;
import java.lang.reflect.Field;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;

import javax.servlet.Filter;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.google.inject.servlet.GuiceFilter;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.CommonConfigurationKeysPublic;
import org.apache.hadoop.fs.FileContext;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.hadoop.mapreduce.MRJobConfig;
import org.apache.hadoop.mapreduce.v2.MiniMRYarnCluster;
import org.apache.hadoop.mapreduce.v2.jobhistory.JHAdminConfig;
import org.apache.hadoop.mapreduce.v2.jobhistory.JobHistoryUtils;
import org.apache.hadoop.net.NetUtils;
import org.apache.hadoop.service.Service;
import org.apache.hadoop.util.ShutdownHookManager;
import org.apache.hadoop.yarn.conf.YarnConfiguration;
import org.apache.hadoop.yarn.server.nodemanager.NodeManager;
import org.apache.hadoop.yarn.server.nodemanager.webapp.WebServer;
import org.apache.hadoop.yarn.webapp.WebApp;

/**
 * Strata's YARN test cluster: HDFS (one NameNode, one DataNode), a
 * ResourceManager, NodeManagers with the default container executor (each
 * container a process of its own, as on a real node) and the MapReduce
 * JobHistoryServer, all Hadoop's own mini clusters in this one JVM.
 *
 * <p>It works in the current directory (Hadoop's mini clusters keep their
 * state under ./target; yarn-cluster.sh changes into the directory it is
 * given) and writes there:
 * <ul>
 * <li>conf/: core-site.xml, hdfs-site.xml, yarn-site.xml and mapred-site.xml,
 * the running cluster's client settings that differ from Hadoop's defaults
 * (see CLIENT_KEYS), for HADOOP_CONF_DIR (spark-submit --master yarn) or a
 * client's class path;</li>
 * <li>cluster.json: the line below, without its prefix.</li>
 * </ul>
 *
 * <p>When every NodeManager has registered it prints one line on stdout,
 * {@code YARNCLUSTER {"rm":…,"rm_web":…,"jhs_web":…,"hdfs":…,"conf_dir":…,
 * "hdfs_web":…,"history_done":…,"nodemanagers":[{"id":…,"local_dirs":…},…],
 * "start_ms":…}}: the ResourceManager's RPC address and web URL, the
 * JobHistoryServer's web URL (its REST API is /ws/v1/history), HDFS's URI
 * and the NameNode's web URL (WebHDFS), the configuration directory, the
 * JobHistoryServer's done directory in HDFS (a finished job's .jhist and
 * _conf.xml are moved there within a second of its end), each
 * NodeManager's id and local directories (the distributed cache), and the
 * milliseconds from this JVM's start. It stops (the
 * clusters in order, containers killed by their NodeManagers) on SIGTERM or
 * SIGINT and, with --eof-stops, when its stdin closes.
 *
 * <p>Flags: --nodemanagers N (default 2), --nm-memory-mb MB (each
 * NodeManager's memory, default 4096), --nm-vcores N (default 4),
 * --eof-stops. The system property yarncluster.container-opts holds the JVM
 * options every MapReduce container gets (yarn-cluster.sh passes the
 * --add-opens JDK 17 needs).
 */
public final class YarnCluster {
    private YarnCluster() {}

    /**
     * MapReduce containers: small, and JVMs that start cheaply (C1 only,
     * the serial collector), for a 2-core node.
     */
    static final int CONTAINER_MB = 512;
    static final String CONTAINER_HEAP = "-Xmx256m -XX:TieredStopAtLevel=1 -XX:+UseSerialGC";

    public static void main(String[] args) {
        try {
            run(args);
        } catch (Throwable t) {
            // The mini clusters' threads would keep a half-started JVM up.
            t.printStackTrace();
            System.exit(1);
        }
    }

    static void run(String[] args) throws Exception {
        int nodeManagers = 2, nmMemoryMb = 4096, nmVcores = 4;
        boolean eofStops = false;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--nodemanagers": nodeManagers = Integer.parseInt(args[++i]); break;
                case "--nm-memory-mb": nmMemoryMb = Integer.parseInt(args[++i]); break;
                case "--nm-vcores": nmVcores = Integer.parseInt(args[++i]); break;
                case "--eof-stops": eofStops = true; break;
                default: throw new IllegalArgumentException("unknown flag " + args[i]);
            }
        }
        File dir = new File("").getAbsoluteFile();
        File confDir = new File(dir, "conf");
        String opts = System.getProperty("yarncluster.container-opts", "");

        Configuration conf = new YarnConfiguration();
        // HDFS: mappers' input is then counted as HDFS_BYTES_READ, which the
        // MapReduce heuristics read; one replica, no permission checks (the
        // containers run as the user who started this JVM).
        conf.set(MiniDFSCluster.HDFS_MINIDFS_BASEDIR, new File(dir, "dfs").getPath());
        conf.setInt("dfs.replication", 1);
        conf.setBoolean("dfs.permissions.enabled", false);
        MiniDFSCluster dfs = new MiniDFSCluster.Builder(conf).numDataNodes(1).build();
        dfs.waitActive();
        conf.set(CommonConfigurationKeysPublic.FS_DEFAULT_NAME_KEY, dfs.getURI().toString());

        // NodeManagers: the mini cluster sizes them from its own key.
        conf.setInt(YarnConfiguration.YARN_MINICLUSTER_NM_PMEM_MB, nmMemoryMb);
        conf.setInt(YarnConfiguration.NM_PMEM_MB, nmMemoryMb);
        conf.setInt(YarnConfiguration.NM_VCORES, nmVcores);
        conf.setInt(YarnConfiguration.RM_SCHEDULER_MINIMUM_ALLOCATION_MB, 256);
        conf.setInt(YarnConfiguration.RM_SCHEDULER_MAXIMUM_ALLOCATION_MB, nmMemoryMb);
        conf.setInt(YarnConfiguration.RM_SCHEDULER_MAXIMUM_ALLOCATION_VCORES, nmVcores);
        // A nearly full disk must not take the NodeManagers out of service.
        conf.setFloat(YarnConfiguration.NM_MAX_PER_DISK_UTILIZATION_PERCENTAGE, 99.5f);
        // Application masters may take half the cluster (the default 10 %
        // leaves a Spark AM of 1 GiB waiting forever on 2 x 4 GiB).
        conf.setFloat("yarn.scheduler.capacity.maximum-am-resource-percent", 0.5f);

        // MapReduce: small containers; finished jobs' histories moved to
        // the done directory at once.
        conf.setLong(JHAdminConfig.MR_HISTORY_MOVE_INTERVAL_MS, 1000);
        // .jhist files as Avro JSON, which collector/fetcher reads (Hadoop
        // 3 writes Avro binary by default).
        conf.set(JHAdminConfig.MR_HS_JHIST_FORMAT, "json");
        conf.setInt(MRJobConfig.MR_AM_VMEM_MB, CONTAINER_MB);
        conf.setInt(MRJobConfig.MAP_MEMORY_MB, CONTAINER_MB);
        conf.setInt(MRJobConfig.REDUCE_MEMORY_MB, CONTAINER_MB);
        conf.set(MRJobConfig.MR_AM_COMMAND_OPTS, (CONTAINER_HEAP + " " + opts).trim());
        conf.set(MRJobConfig.MAP_JAVA_OPTS, (CONTAINER_HEAP + " " + opts).trim());
        conf.set(MRJobConfig.REDUCE_JAVA_OPTS, (CONTAINER_HEAP + " " + opts).trim());

        MiniMRYarnCluster mr = new MiniMRYarnCluster("strata", nodeManagers);
        ShutdownHookManager.get().addShutdownHook(() -> {
            mr.stop();
            try {
                dfs.shutdown();
            } catch (IllegalStateException e) {
                // stopped; it only failed to unregister its own hook
            }
        }, 100); // before Hadoop's own hooks close the file systems
        mr.init(conf);
        mr.start();
        if (!mr.waitForNodeManagersToConnect(60_000)) {
            throw new IllegalStateException("NodeManagers did not register within 60 s");
        }
        separateWebApps(mr, nodeManagers);
        Configuration running = mr.getConfig();
        writeConf(running, confDir);

        List<Map<String, String>> nms = new ArrayList<>();
        for (int i = 0; i < nodeManagers; i++) {
            NodeManager nm = mr.getNodeManager(i);
            nms.add(Map.of("id", nm.getNMContext().getNodeId().toString(),
                    "local_dirs", nm.getConfig().get(YarnConfiguration.NM_LOCAL_DIRS)));
        }
        Map<String, Object> addrs = new LinkedHashMap<>();
        addrs.put("rm", running.get(YarnConfiguration.RM_ADDRESS));
        addrs.put("rm_web", "http://" + running.get(YarnConfiguration.RM_WEBAPP_ADDRESS));
        addrs.put("jhs_web", "http://" + running.get(JHAdminConfig.MR_HISTORY_WEBAPP_ADDRESS));
        addrs.put("hdfs", running.get(CommonConfigurationKeysPublic.FS_DEFAULT_NAME_KEY));
        addrs.put("conf_dir", confDir.getPath());
        addrs.put("hdfs_web", "http://" + NetUtils.getHostPortString(dfs.getNameNode().getHttpAddress()));
        addrs.put("history_done", FileContext.getFileContext(running).makeQualified(
                new Path(JobHistoryUtils.getConfiguredHistoryServerDoneDirPrefix(running))).toString());
        addrs.put("nodemanagers", nms);
        addrs.put("start_ms", System.currentTimeMillis() - ManagementFactory.getRuntimeMXBean().getStartTime());
        String line = new ObjectMapper().writeValueAsString(addrs);
        Files.writeString(new File(dir, "cluster.json").toPath(), line + "\n");
        System.out.println("YARNCLUSTER " + line);
        System.out.flush();

        if (eofStops) {
            byte[] buf = new byte[256];
            while (System.in.read(buf) >= 0) {
                // a client keeps the pipe open while it wants the cluster
            }
            System.exit(0);
        }
        Thread.currentThread().join();
    }

    /**
     * Gives each web server of the cluster its own application's routes.
     * Hadoop builds a Guice injector per web application, but Jetty serves
     * each through a GuiceFilter made by class name, and such filters share
     * Guice's one static pipeline: in one JVM every server (the
     * ResourceManager's REST API, the JobHistoryServer's) would answer with
     * the routes of the last application started (a NodeManager's). The
     * filter each server runs is handed the pipeline of the injector that
     * built its application, as an injected GuiceFilter would have.
     */
    static void separateWebApps(MiniMRYarnCluster mr, int nodeManagers) throws ReflectiveOperationException {
        List<WebApp> apps = new ArrayList<>();
        apps.add((WebApp) field(mr.getResourceManager(), "webApp"));
        apps.add((WebApp) field(mr.getHistoryServer().getClientService(), "webApp"));
        for (int i = 0; i < nodeManagers; i++) {
            for (Service s : mr.getNodeManager(i).getServices()) {
                if (s instanceof WebServer) {
                    apps.add((WebApp) field(s, "webApp"));
                }
            }
        }
        Field pipeline = GuiceFilter.class.getDeclaredField("injectedPipeline");
        pipeline.setAccessible(true);
        for (WebApp w : apps) {
            GuiceFilter own = (GuiceFilter) field(w, "guiceFilter");
            Filter served = w.httpServer().getWebAppContext().getServletHandler().getFilter("guice").getFilter();
            pipeline.set(served, pipeline.get(own));
        }
    }

    /** The value of a private field declared by o's class or a superclass. */
    static Object field(Object o, String name) throws ReflectiveOperationException {
        for (Class<?> c = o.getClass(); c != null; c = c.getSuperclass()) {
            try {
                Field f = c.getDeclaredField(name);
                f.setAccessible(true);
                return f.get(o);
            } catch (NoSuchFieldException e) {
                // declared higher up
            }
        }
        throw new NoSuchFieldException(o.getClass().getName() + "." + name);
    }

    /**
     * What a client of the cluster needs (a key, or a prefix ending in a
     * dot): where HDFS, the ResourceManager and the JobHistoryServer are,
     * the scheduler's limits and every MapReduce setting. The servers' own
     * settings (directories, test-only classes the mini clusters configure)
     * stay out: Spark's Hadoop client lacks those classes.
     */
    static final List<String> CLIENT_KEYS = List.of("fs.defaultFS", "dfs.replication", "yarn.is.minicluster",
            "yarn.resourcemanager.", "yarn.scheduler.", "mapreduce.", "mapred.", "yarn.app.mapreduce.");

    /**
     * Writes every client setting of the running cluster that differs from
     * Hadoop's defaults into the site file its prefix belongs to.
     */
    static void writeConf(Configuration running, File confDir) throws IOException {
        Configuration defaults = new Configuration(); // every default resource the cluster loaded
        Map<String, Configuration> sites = new TreeMap<>();
        for (String f : List.of("core", "hdfs", "yarn", "mapred")) {
            sites.put(f, new Configuration(false));
        }
        List<String> keys = new ArrayList<>();
        for (Map.Entry<String, String> e : running) {
            keys.add(e.getKey());
        }
        for (String k : keys) {
            String v = running.get(k);
            if (v == null || !isClientKey(k) || Configuration.isDeprecated(k) || Objects.equals(v, defaults.get(k))) {
                continue;
            }
            sites.get(siteOf(k)).set(k, v);
        }
        if (!confDir.isDirectory() && !confDir.mkdirs()) {
            throw new IOException("mkdir " + confDir);
        }
        for (Map.Entry<String, Configuration> s : sites.entrySet()) {
            File f = new File(confDir, s.getKey() + "-site.xml");
            try (OutputStream out = new FileOutputStream(f)) {
                s.getValue().writeXml(out);
            }
        }
    }

    static boolean isClientKey(String key) {
        for (String c : CLIENT_KEYS) {
            if (c.endsWith(".") ? key.startsWith(c) : key.equals(c)) {
                return true;
            }
        }
        return false;
    }

    static String siteOf(String key) {
        if (key.startsWith("mapreduce.") || key.startsWith("mapred.") || key.startsWith("yarn.app.mapreduce.")) {
            return "mapred";
        }
        if (key.startsWith("yarn.")) {
            return "yarn";
        }
        if (key.startsWith("dfs.")) {
            return "hdfs";
        }
        return "core";
    }
}
