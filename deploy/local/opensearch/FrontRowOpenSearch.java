// Minimal OpenSearch 2.19 node for local development and tests, started by deploy/local/opensearch.sh.
// Usage: java -cp <opensearch jars>:<classes> FrontRowOpenSearch <home>
// Reads <home>/config/opensearch.yml and <home>/config/log4j2.properties. Runs the HTTP (Netty4)
// transport and the common analysis plugin (edge_ngram, lowercase, ...) from the class path:
// no plugin bundles, no security manager, no bootstrap checks.
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.opensearch.analysis.common.CommonAnalysisPlugin;
import org.opensearch.common.logging.LogConfigurator;
import org.opensearch.common.settings.Settings;
import org.opensearch.env.Environment;
import org.opensearch.node.InternalSettingsPreparer;
import org.opensearch.node.Node;
import org.opensearch.transport.Netty4Plugin;

public final class FrontRowOpenSearch extends Node {
    private FrontRowOpenSearch(Environment environment) {
        super(environment, List.of(Netty4Plugin.class, CommonAnalysisPlugin.class), true);
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 1) {
            System.err.println("usage: FrontRowOpenSearch <home>");
            System.exit(2);
        }
        Path home = Path.of(args[0]).toAbsolutePath();
        Settings initial = Settings.builder().put("path.home", home.toString()).build();
        Environment environment =
                InternalSettingsPreparer.prepareEnvironment(initial, Map.of(), home.resolve("config"), () -> "frontrow");
        LogConfigurator.registerErrorListener();
        LogConfigurator.setNodeName(Node.NODE_NAME_SETTING.get(environment.settings()));
        LogConfigurator.configure(environment);

        CountDownLatch stopped = new CountDownLatch(1);
        Node node;
        try {
            node = new FrontRowOpenSearch(environment);
            node.start();
        } catch (Throwable t) {
            t.printStackTrace();
            System.exit(1);
            return;
        }
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            try {
                node.close();
                node.awaitClose(30, TimeUnit.SECONDS);
            } catch (Exception e) {
                e.printStackTrace();
            } finally {
                stopped.countDown();
            }
        }, "frontrow-shutdown"));
        System.out.println("FrontRowOpenSearch started");
        stopped.await(); // the node's own threads are daemons: keep the JVM alive
    }
}
