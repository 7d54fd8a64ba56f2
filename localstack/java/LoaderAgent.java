// LocalStack always starts DynamoDB Local with -javaagent:ddb-local-loader-0.1.jar. Its own
// agent is downloaded from the internet; this one does nothing, which is all that is needed.
public class LoaderAgent {
    public static void premain(String args) {}

    public static void premain(String args, java.lang.instrument.Instrumentation inst) {}
}
