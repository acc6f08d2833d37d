// Kafka's own FileLock (org.apache.kafka.server.util.FileLock, what LogManager.lockLogDirs takes on
// every log dir) on <dir>/.lock, to check that Kafka and minibroker exclude each other
// (tests/integration/test_data_dir_lock.py).
//   java -cp <kafka-server-common.jar:slf4j-api.jar> tools/java/LockCheck.java DIR [HOLD_MS]
// prints "locked" (then holds it HOLD_MS, printing "released" after) or "refused".
import java.io.File;

import org.apache.kafka.server.util.FileLock;

public class LockCheck {
    public static void main(String[] args) throws Exception {
        FileLock lock = new FileLock(new File(args[0], ".lock"));
        if (!lock.tryLock()) {
            System.out.println("refused");
            return;
        }
        System.out.println("locked");
        System.out.flush();
        if (args.length > 1) {
            Thread.sleep(Long.parseLong(args[1]));
        }
        lock.unlockAndClose();
        System.out.println("released");
    }
}
