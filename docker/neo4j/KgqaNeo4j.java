// A Neo4j 5.26 Community DBMS with Bolt on 127.0.0.1, for kgqa's tests and benches where no Docker
// engine runs (docker/launchers.py starts it).  Usage: java -cp 'lib/*:classes' KgqaNeo4j HOME PORT PAGECACHE
// Prints "KGQA-NEO4J-READY" once Bolt accepts connections; shuts down cleanly on SIGTERM.
import java.nio.file.Path;
import org.neo4j.configuration.GraphDatabaseSettings;
import org.neo4j.configuration.connectors.BoltConnector;
import org.neo4j.configuration.connectors.HttpConnector;
import org.neo4j.configuration.helpers.SocketAddress;
import org.neo4j.dbms.api.DatabaseManagementService;
import org.neo4j.dbms.api.DatabaseManagementServiceBuilder;
import org.neo4j.io.ByteUnit;

public final class KgqaNeo4j {
    public static void main(String[] args) throws Exception {
        Path home = Path.of(args[0]);
        int port = Integer.parseInt(args[1]);
        long pageCacheMb = args.length > 2 ? Long.parseLong(args[2]) : 512;
        DatabaseManagementService dbms = new DatabaseManagementServiceBuilder(home)
                .setConfig(BoltConnector.enabled, true)
                .setConfig(BoltConnector.listen_address, new SocketAddress("127.0.0.1", port))
                .setConfig(HttpConnector.enabled, false)
                .setConfig(GraphDatabaseSettings.auth_enabled, false)
                .setConfig(GraphDatabaseSettings.pagecache_memory, ByteUnit.mebiBytes(pageCacheMb))
                .build();
        Runtime.getRuntime().addShutdownHook(new Thread(dbms::shutdown));
        dbms.database(GraphDatabaseSettings.DEFAULT_DATABASE_NAME);
        System.out.println("KGQA-NEO4J-READY");
        System.out.flush();
        Thread.currentThread().join();
    }
}
