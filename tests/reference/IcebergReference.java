/*
 * The Java reference for Pangolin's metadata checks: what Apache Iceberg's own REST server side
 * (Iceberg 1.10, as in iceberg-spark-runtime) makes of a request.
 *
 * Compiled at test time against the runtime jar (tests/spark/reference.py does that) and run
 * once per test session: one JVM answers a whole batch.
 *
 *   java -cp RUNTIME_JAR:CLASSES IcebergReference [CASES.json]   (standard input without a file)
 *
 * The input is a JSON array of cases {"name", "kind", "base", "request"}; the output is one JSON
 * object per line per case, in input order:
 *
 *   {"name": ..., "accepted": true|false, "error": "<exception class>: <message>" | null,
 *    "stage": where it failed | null, "metadata": the resulting metadata as Java writes it | null}
 *
 * Kinds, each done as Iceberg's CatalogHandlers and catalog builders do it:
 *   create-table    request: a CreateTableRequest body; TableMetadata.newTableMetadata.
 *   update-table    base: table metadata; request: {"requirements", "updates"}; requirements are
 *                   validated against base, updates applied to TableMetadata.buildFrom(base).
 *   register-table  request: a table metadata file's content, parsed.
 *   create-view     request: a CreateViewRequest body; ViewMetadata.builder().
 *   update-view     base: view metadata; request: {"requirements", "updates"}.
 *   parse-table     request: a table metadata file's content, parsed (as register-table).
 *   parse-view      request: a view metadata file's content, parsed.
 *
 * Any exception makes the case refused; "stage" says where: "parse-base" (the case's base is not
 * valid metadata: a mistake in the case, not an answer), "parse-request", "requirements" or
 * "build". The program exits non-zero only when its input cannot be read at all.
 */

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.stream.Collectors;
import org.apache.iceberg.MetadataUpdate;
import org.apache.iceberg.PartitionSpec;
import org.apache.iceberg.Schema;
import org.apache.iceberg.SortOrder;
import org.apache.iceberg.TableMetadata;
import org.apache.iceberg.TableMetadataParser;
import org.apache.iceberg.UpdateRequirement;
import org.apache.iceberg.relocated.com.google.common.collect.Maps;
import org.apache.iceberg.rest.RESTSerializers;
import org.apache.iceberg.rest.requests.CreateTableRequest;
import org.apache.iceberg.rest.requests.CreateViewRequest;
import org.apache.iceberg.rest.requests.CreateViewRequestParser;
import org.apache.iceberg.rest.requests.UpdateTableRequest;
import org.apache.iceberg.rest.requests.UpdateTableRequestParser;
import org.apache.iceberg.shaded.com.fasterxml.jackson.annotation.JsonAutoDetect;
import org.apache.iceberg.shaded.com.fasterxml.jackson.annotation.PropertyAccessor;
import org.apache.iceberg.shaded.com.fasterxml.jackson.databind.DeserializationFeature;
import org.apache.iceberg.shaded.com.fasterxml.jackson.databind.JsonMappingException;
import org.apache.iceberg.shaded.com.fasterxml.jackson.databind.JsonNode;
import org.apache.iceberg.shaded.com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.iceberg.shaded.com.fasterxml.jackson.databind.PropertyNamingStrategies;
import org.apache.iceberg.shaded.com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.iceberg.util.JsonUtil;
import org.apache.iceberg.view.ImmutableViewVersion;
import org.apache.iceberg.view.SQLViewRepresentation;
import org.apache.iceberg.view.ViewMetadata;
import org.apache.iceberg.view.ViewMetadataParser;
import org.apache.iceberg.view.ViewRepresentation;
import org.apache.iceberg.view.ViewVersion;

public class IcebergReference {

  /** Where a case failed; the message of the exception is the rest of the answer. */
  private static final class Failure extends Exception {
    final String stage;

    Failure(String stage, Throwable cause) {
      super(cause);
      this.stage = stage;
    }
  }

  /** A stage of a case, which may throw anything. */
  private interface Step<T> {
    T run() throws Exception;
  }

  private static <T> T stage(String name, Step<T> step) throws Failure {
    try {
      return step.run();
    } catch (Exception | StackOverflowError | AssertionError e) {
      throw new Failure(name, e);
    }
  }

  /**
   * Parses request bodies as Iceberg's REST server does: Jackson with kebab-case names, fields
   * read directly, unknown properties ignored, and Iceberg's REST serializers (the same settings
   * as the package-private RESTObjectMapper).
   */
  private static final ObjectMapper REST = restMapper();

  private static ObjectMapper restMapper() {
    ObjectMapper mapper = new ObjectMapper();
    mapper.setVisibility(PropertyAccessor.FIELD, JsonAutoDetect.Visibility.ANY);
    mapper.configure(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES, false);
    mapper.setPropertyNamingStrategy(new PropertyNamingStrategies.KebabCaseStrategy());
    RESTSerializers.registerAll(mapper);
    return mapper;
  }

  public static void main(String[] args) throws IOException {
    byte[] input;
    if (args.length > 0) {
      input = Files.readAllBytes(Paths.get(args[0]));
    } else {
      input = readAll(System.in);
    }
    JsonNode cases = JsonUtil.mapper().readTree(input);
    if (cases == null || !cases.isArray()) {
      throw new IllegalArgumentException("the input must be a JSON array of cases");
    }
    // Iceberg logs through SLF4J; the answers alone go to standard output, UTF-8.
    PrintStream out = new PrintStream(System.out, false, StandardCharsets.UTF_8);
    for (JsonNode c : cases) {
      out.println(JsonUtil.mapper().writeValueAsString(answer(c)));
    }
    out.flush();
  }

  private static byte[] readAll(InputStream in) throws IOException {
    ByteArrayOutputStream buffer = new ByteArrayOutputStream();
    in.transferTo(buffer);
    return buffer.toByteArray();
  }

  private static ObjectNode answer(JsonNode c) {
    ObjectNode answer = JsonUtil.mapper().createObjectNode();
    String name = c.path("name").asText("");
    String kind = c.path("kind").asText("");
    answer.put("name", name);
    try {
      String metadata = run(name, kind, c.get("base"), c.get("request"));
      answer.put("accepted", true);
      answer.putNull("error");
      answer.putNull("stage");
      answer.set("metadata", JsonUtil.mapper().readTree(metadata));
    } catch (Failure failure) {
      Throwable cause = failure.getCause();
      // Jackson wraps what a deserializer throws (Iceberg's parsers throw
      // IllegalArgumentException); the wrapped exception is the answer.
      while (cause instanceof JsonMappingException && cause.getCause() != null) {
        cause = cause.getCause();
      }
      answer.put("accepted", false);
      answer.put("error", cause.getClass().getSimpleName() + ": " + cause.getMessage());
      answer.put("stage", failure.stage);
      answer.putNull("metadata");
    } catch (Exception e) {
      answer.put("accepted", false);
      answer.put("error", e.getClass().getSimpleName() + ": " + e.getMessage());
      answer.put("stage", "harness");
      answer.putNull("metadata");
    }
    return answer;
  }

  private static String run(String name, String kind, JsonNode base, JsonNode request)
      throws Failure {
    switch (kind) {
      case "create-table":
        return TableMetadataParser.toJson(createTable(name, request));
      case "update-table":
        return TableMetadataParser.toJson(updateTable(base, request));
      case "register-table":
      case "parse-table":
        return TableMetadataParser.toJson(
            stage("parse-request", () -> TableMetadataParser.fromJson(request)));
      case "create-view":
        return ViewMetadataParser.toJson(createView(name, request));
      case "update-view":
        return ViewMetadataParser.toJson(updateView(base, request));
      case "parse-view":
        return ViewMetadataParser.toJson(
            stage("parse-request", () -> ViewMetadataParser.fromJson(request)));
      default:
        throw new Failure("harness", new IllegalArgumentException("unknown case kind: " + kind));
    }
  }

  /** A location for requests that name none, as a catalog's default warehouse location. */
  private static String defaultLocation(String name) {
    return "file:/tmp/ref/" + name.toLowerCase(Locale.ROOT).replaceAll("[^a-z0-9]+", "-");
  }

  /**
   * CatalogHandlers.createTable: request.validate(), then the catalog's table builder, whose
   * create() calls TableMetadata.newTableMetadata with the bound spec and sort order (or
   * unpartitioned and unsorted) and the request's properties (the catalog has no default or
   * override properties here).
   */
  private static TableMetadata createTable(String name, JsonNode request) throws Failure {
    CreateTableRequest parsed =
        stage("parse-request", () -> REST.treeToValue(request, CreateTableRequest.class));
    return stage(
        "build",
        () -> {
          parsed.validate();
          Schema schema = parsed.schema();
          PartitionSpec spec = parsed.spec();
          SortOrder order = parsed.writeOrder();
          Map<String, String> properties = Maps.newHashMap(parsed.properties());
          return TableMetadata.newTableMetadata(
              schema,
              spec != null ? spec : PartitionSpec.unpartitioned(),
              order != null ? order : SortOrder.unsorted(),
              parsed.location() != null ? parsed.location() : defaultLocation(name),
              properties);
        });
  }

  /**
   * CatalogHandlers.commit for a table: every requirement validated against base, every update
   * applied to TableMetadata.buildFrom(base), build(). Without changes nothing is committed and
   * the base stays.
   */
  private static TableMetadata updateTable(JsonNode base, JsonNode request) throws Failure {
    TableMetadata current = stage("parse-base", () -> TableMetadataParser.fromJson(base));
    UpdateTableRequest parsed =
        stage("parse-request", () -> UpdateTableRequestParser.fromJson(request));
    stage(
        "requirements",
        () -> {
          for (UpdateRequirement requirement : parsed.requirements()) {
            requirement.validate(current);
          }
          return null;
        });
    return stage(
        "build",
        () -> {
          TableMetadata.Builder builder = TableMetadata.buildFrom(current);
          for (MetadataUpdate update : parsed.updates()) {
            update.applyTo(builder);
          }
          TableMetadata updated = builder.build();
          return updated.changes().isEmpty() ? current : updated;
        });
  }

  /**
   * CatalogHandlers.createView and the catalog's view builder: only SQL representations, at
   * least one; a schema and a default namespace; the version becomes version 1 on the request's
   * schema; location and properties from the request.
   *
   * One deliberate departure: Java's view builder replaces the version's summary with its own
   * environment (engine and Iceberg versions) and its timestamp with the current time; here the
   * version keeps the client's summary and timestamp, as a catalog storing the client's version
   * does (the comparison ignores version timestamps).
   */
  private static ViewMetadata createView(String name, JsonNode request) throws Failure {
    CreateViewRequest parsed =
        stage("parse-request", () -> CreateViewRequestParser.fromJson(request));
    return stage(
        "build",
        () -> {
          parsed.validate();
          ViewVersion requested = parsed.viewVersion();
          Set<String> unsupported =
              requested.representations().stream()
                  .filter(r -> !(r instanceof SQLViewRepresentation))
                  .map(ViewRepresentation::type)
                  .collect(Collectors.toSet());
          if (!unsupported.isEmpty()) {
            throw new IllegalStateException(
                String.format("Found unsupported view representations: %s", unsupported));
          }
          // The checks of the catalog's view builder (BaseMetastoreViewCatalog), same messages.
          if (requested.representations().isEmpty()) {
            throw new IllegalStateException("Cannot create view without specifying a query");
          }
          if (parsed.schema() == null) {
            throw new IllegalStateException("Cannot create view without specifying schema");
          }
          if (requested.defaultNamespace() == null) {
            throw new IllegalStateException(
                "Cannot create view without specifying a default namespace");
          }
          Schema schema = parsed.schema();
          ViewVersion version =
              ImmutableViewVersion.builder()
                  .from(requested)
                  .versionId(1)
                  .schemaId(schema.schemaId())
                  .build();
          return ViewMetadata.builder()
              .assignUUID(UUID.randomUUID().toString())
              .setLocation(
                  parsed.location() != null ? parsed.location() : defaultLocation(name))
              .setProperties(parsed.properties())
              .setCurrentVersion(version, schema)
              .build();
        });
  }

  /** CatalogHandlers.commit for a view. */
  private static ViewMetadata updateView(JsonNode base, JsonNode request) throws Failure {
    ViewMetadata current = stage("parse-base", () -> ViewMetadataParser.fromJson(base));
    UpdateTableRequest parsed =
        stage("parse-request", () -> UpdateTableRequestParser.fromJson(request));
    stage(
        "requirements",
        () -> {
          for (UpdateRequirement requirement : parsed.requirements()) {
            requirement.validate(current);
          }
          return null;
        });
    return stage(
        "build",
        () -> {
          ViewMetadata.Builder builder = ViewMetadata.buildFrom(current);
          for (MetadataUpdate update : parsed.updates()) {
            update.applyTo(builder);
          }
          ViewMetadata updated = builder.build();
          return updated.changes().isEmpty() ? current : updated;
        });
  }
}
