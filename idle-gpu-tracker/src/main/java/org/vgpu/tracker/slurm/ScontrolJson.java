package org.vgpu.tracker.slurm;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

import com.fasterxml.jackson.annotation.JsonSetter;
import com.fasterxml.jackson.annotation.Nulls;
import com.fasterxml.jackson.core.JacksonException;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.exc.InputCoercionException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonMappingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.MapperFeature;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.PropertyNamingStrategies;
import com.fasterxml.jackson.databind.cfg.CoercionAction;
import com.fasterxml.jackson.databind.cfg.CoercionInputShape;
import com.fasterxml.jackson.databind.exc.MismatchedInputException;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.fasterxml.jackson.databind.type.LogicalType;

/**
 * Reads what {@code scontrol --json=VERSION show node -d} and {@code scontrol --json=VERSION show job -d} print
 * (Slurm 23.11 and later) for one {@link DataParser} version, with Jackson into typed records, and makes of them the
 * {@link SlurmNode}s and {@link SlurmJob}s the text reader makes of the same cluster state. A document of another
 * data_parser version, one that lacks a field the tracker reads, has one of another type, or carries Slurm's own
 * errors is refused with a {@link SlurmException} that names the command, the field and what was expected.
 */
public final class ScontrolJson implements ScontrolReader {
    /**
     * Strict where the tracker reads (a field missing, null, or of another type is refused, never coerced), silent
     * about the many fields it does not read, which every Slurm release adds to.
     */
    private static final ObjectMapper MAPPER = JsonMapper.builder()
            .propertyNamingStrategy(PropertyNamingStrategies.SNAKE_CASE)
            .disable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES)
            .enable(DeserializationFeature.FAIL_ON_MISSING_CREATOR_PROPERTIES)
            .enable(DeserializationFeature.FAIL_ON_NULL_CREATOR_PROPERTIES)
            .enable(DeserializationFeature.FAIL_ON_NULL_FOR_PRIMITIVES)
            .disable(DeserializationFeature.ACCEPT_FLOAT_AS_INT)
            .disable(MapperFeature.ALLOW_COERCION_OF_SCALARS)
            // Nor a null inside an array (a state, a partition, a gres_detail entry, a node).
            .defaultSetterInfo(JsonSetter.Value.forContentNulls(Nulls.FAIL))
            .withCoercionConfig(
                    LogicalType.Textual,
                    config -> config.setCoercion(CoercionInputShape.Integer, CoercionAction.Fail)
                            .setCoercion(CoercionInputShape.Float, CoercionAction.Fail)
                            .setCoercion(CoercionInputShape.Boolean, CoercionAction.Fail))
            .build();

    /**
     * The flags of a job's state that {@code scontrol show job}'s text prints instead of the base state, in the
     * order it prefers them (Slurm's job_state_string); the JSON lists the base state first, then every flag.
     */
    private static final List<String> JOB_STATE_FLAGS_SHOWN = List.of(
            "COMPLETING",
            "STAGE_OUT",
            "CONFIGURING",
            "RESIZING",
            "REQUEUED",
            "REQUEUE_FED",
            "REQUEUE_HOLD",
            "SPECIAL_EXIT",
            "STOPPED",
            "REVOKED",
            "RESV_DEL_HOLD",
            "SIGNALING");

    /** Jackson's words for a member absent and a member null, which name the member. */
    private static final Pattern MISSING_PROPERTY = Pattern.compile("Missing (?:required )?creator property '([^']+)'");

    private static final Pattern NULL_PROPERTY = Pattern.compile("Null value for creator property '([^']+)'");

    private final DataParser parser;

    public ScontrolJson(DataParser parser) {
        this.parser = parser;
    }

    public DataParser parser() {
        return parser;
    }

    @Override
    public String form() {
        return "scontrol's JSON (data_parser " + parser.version() + ")";
    }

    @Override
    public List<String> showNodesCommand() {
        return List.of("scontrol", "--json=" + parser.version(), "show", "node", "-d");
    }

    @Override
    public List<String> showJobsCommand(Optional<Long> job) {
        List<String> command = new ArrayList<>(List.of("scontrol", "--json=" + parser.version(), "show", "job", "-d"));
        job.ifPresent(id -> command.add(Long.toString(id)));
        return List.copyOf(command);
    }

    @Override
    public List<SlurmNode> nodes(String json) {
        String source = String.join(" ", showNodesCommand());
        NodeDocument document = read(source, json, NodeDocument.class);
        checkMeta(source, document.meta(), document.errors());
        List<SlurmNode> nodes = new ArrayList<>();
        for (NodeEntry node : document.nodes()) {
            String where = source + " node " + node.name();
            nodes.add(new SlurmNode(
                    node.name(),
                    String.join("+", nonEmpty(where, "state", node.state())),
                    node.cpus(),
                    node.allocCpus(),
                    node.partitions(),
                    GresItem.counts(GresItem.parseList(where + " gres", node.gres())),
                    GresItem.counts(GresItem.parseList(where + " gres_used", node.gresUsed()))));
        }
        return List.copyOf(nodes);
    }

    @Override
    public List<SlurmJob> jobs(String json) {
        String source = String.join(" ", showJobsCommand(Optional.empty()));
        JobDocument document = read(source, json, JobDocument.class);
        checkMeta(source, document.meta(), document.errors());
        List<SlurmJob> jobs = new ArrayList<>();
        for (int i = 0; i < document.jobs().size(); i++) {
            JobEntry job = document.jobs().get(i);
            String where = source + " job " + job.jobId();
            jobs.add(new SlurmJob(
                    job.jobId(),
                    job.name(),
                    job.userName(),
                    jobState(where, job.jobState()),
                    job.stateReason(),
                    job.partition(),
                    job.priority().value(where, "priority"),
                    Math.toIntExact(job.minimumCpusPerNode().value(where, "minimum_cpus_per_node")),
                    GresItem.counts(GresItem.parseList(where + " tres_per_node", job.tresPerNode())),
                    allocations(source, "jobs[" + i + "]", where, job)));
        }
        return List.copyOf(jobs);
    }

    /** One allocation per node that holds GRES: gres_detail has one entry per allocated node, in their order. */
    private List<SlurmJob.NodeAllocation> allocations(String source, String path, String where, JobEntry job) {
        List<SlurmJob.NodeAllocation> allocations = new ArrayList<>();
        if (job.gresDetail().isEmpty()) {
            return allocations;
        }
        List<String> nodes = allocatedNodes(source, List.of(path, "job_resources"), job.jobResources());
        if (nodes.size() != job.gresDetail().size()) {
            throw SlurmException.badOutput(
                    where,
                    "has " + job.gresDetail().size() + " gres_detail entries for " + nodes.size()
                            + " allocated nodes (data_parser " + parser.version() + ")");
        }
        for (int node = 0; node < nodes.size(); node++) {
            List<GresItem> gres =
                    GresItem.parseList(where + " gres_detail", job.gresDetail().get(node));
            if (!gres.isEmpty()) {
                allocations.add(new SlurmJob.NodeAllocation(nodes.get(node), gres));
            }
        }
        return allocations;
    }

    private List<String> allocatedNodes(String source, List<String> path, JsonNode jobResources) {
        return switch (parser.allocatedNodes()) {
            case LIST_OF_NODENAMES ->
                convert(source, path, jobResources, ResourcesByNodename.class).allocatedNodes().stream()
                        .map(NodenameEntry::nodename)
                        .toList();
            case ALLOCATION_OBJECTS ->
                convert(source, path, jobResources, ResourcesByAllocation.class).nodes().allocation().stream()
                        .map(AllocationEntry::name)
                        .toList();
        };
    }

    /** The state as the text prints it: the flag it prefers when one is set, else the base state. */
    private static String jobState(String where, List<String> state) {
        nonEmpty(where, "job_state", state);
        return JOB_STATE_FLAGS_SHOWN.stream()
                .filter(state::contains)
                .findFirst()
                .orElse(state.getFirst());
    }

    private static List<String> nonEmpty(String where, String field, List<String> values) {
        if (values.isEmpty()) {
            throw SlurmException.badOutput(where, "'" + field + "' is an empty array, expected a state");
        }
        return values;
    }

    private void checkMeta(String source, Meta meta, List<JsonNode> errors) {
        if (!meta.plugin().dataParser().equals(parser.pluginName())) {
            throw SlurmException.badOutput(
                    source,
                    "the document is " + describe(meta.plugin().dataParser()) + " of Slurm "
                            + meta.slurm().release() + ", expected " + parser.pluginName());
        }
        if (!errors.isEmpty()) {
            throw SlurmException.badOutput(
                    source,
                    "Slurm reports "
                            + errors.stream().map(ScontrolJson::describeError).collect(Collectors.joining("; ")));
        }
    }

    private static String describe(String dataParser) {
        return dataParser.isEmpty() ? "of no data_parser" : dataParser;
    }

    private static String describeError(JsonNode error) {
        String description = error.path("description").asText("");
        String kind = error.path("error").asText("");
        String text = description.isEmpty() ? kind : kind.isEmpty() ? description : description + " (" + kind + ")";
        return text.isEmpty() ? "an error it does not describe" : "'" + text + "'";
    }

    private <T> T read(String source, String json, Class<T> type) {
        // The syntax first, with this product's words for what is wrong and a bound on nesting.
        Json.parse(source, json);
        // A parser of our own, still open when Jackson fails, tells what it found there.
        try (JsonParser parser = MAPPER.createParser(json)) {
            try {
                return MAPPER.readValue(parser, type);
            } catch (JacksonException e) {
                throw refusal(source, List.of(), e, found(parser));
            }
        } catch (IOException e) {
            throw SlurmException.badOutput(source, "it could not be read");
        }
    }

    private <T> T convert(String source, List<String> path, JsonNode value, Class<T> type) {
        if (value.isNull() || value.isMissingNode()) {
            throw SlurmException.badOutput(
                    source,
                    joined(path) + " is null, expected the job's allocation (data_parser " + parser.version() + ")");
        }
        try (JsonParser parser = MAPPER.treeAsTokens(value)) {
            try {
                return MAPPER.readValue(parser, type);
            } catch (JacksonException e) {
                throw refusal(source, path, e, found(parser));
            }
        } catch (IOException e) {
            throw SlurmException.badOutput(source, joined(path) + " could not be read");
        }
    }

    /**
     * What Jackson found wrong, in this product's words: where (a JSON path below {@code base}), what was expected,
     * what was found.
     */
    private SlurmException refusal(String source, List<String> base, JacksonException e, String found) {
        List<String> path = new ArrayList<>(base);
        if (e instanceof JsonMappingException mapping) {
            for (JsonMappingException.Reference reference : mapping.getPath()) {
                path.add(
                        reference.getFieldName() != null ? reference.getFieldName() : "[" + reference.getIndex() + "]");
            }
        }
        String message = e.getOriginalMessage() == null ? "" : e.getOriginalMessage();
        String version = " (data_parser " + parser.version() + ")";
        Matcher missing = MISSING_PROPERTY.matcher(message);
        if (missing.find()) {
            // Jackson's path ends with the missing member; the object that lacks it is the one before.
            if (!path.isEmpty() && path.getLast().equals(missing.group(1))) {
                path.removeLast();
            }
            return SlurmException.badOutput(
                    source, joined(path) + " has no '" + missing.group(1) + "', which the tracker reads" + version);
        }
        if (NULL_PROPERTY.matcher(message).find()) {
            return SlurmException.badOutput(source, joined(path) + " is null" + version);
        }
        if (e instanceof InputCoercionException || message.contains("out of range")) {
            return SlurmException.badOutput(source, joined(path) + ": a number out of range" + version);
        }
        if (e instanceof MismatchedInputException mismatch) {
            return SlurmException.badOutput(
                    source,
                    joined(path) + " is " + found + ", expected " + expected(mismatch.getTargetType()) + version);
        }
        return SlurmException.badOutput(source, joined(path) + ": " + describeOther(message) + version);
    }

    /** {@code jobs[3].job_resources.nodes}; {@code the document} for none. */
    private static String joined(List<String> path) {
        StringBuilder joined = new StringBuilder();
        for (String element : path) {
            if (!joined.isEmpty() && !element.startsWith("[")) {
                joined.append('.');
            }
            joined.append(element);
        }
        return joined.isEmpty() ? "the document" : joined.toString();
    }

    private static String found(JsonParser parser) {
        JsonToken token = parser.currentToken();
        if (token == null) {
            return "of another type";
        }
        return switch (token) {
            case START_OBJECT, END_OBJECT, FIELD_NAME -> "an object";
            case START_ARRAY, END_ARRAY -> "an array";
            case VALUE_STRING -> "a string";
            case VALUE_NUMBER_INT -> "a whole number";
            case VALUE_NUMBER_FLOAT -> "a fraction";
            case VALUE_TRUE, VALUE_FALSE -> "true or false";
            case VALUE_NULL -> "null";
            default -> "of another type";
        };
    }

    private static String expected(Class<?> type) {
        if (type == null) {
            return "another type";
        }
        if (type == int.class || type == long.class || type == Integer.class || type == Long.class) {
            return "a whole number";
        }
        if (type == boolean.class || type == Boolean.class) {
            return "true or false";
        }
        if (type == String.class) {
            return "a string";
        }
        if (Collection.class.isAssignableFrom(type)) {
            return "an array";
        }
        return "an object";
    }

    private static String describeOther(String message) {
        // Jackson's first sentence, without its hints for programmers after it.
        int end = message.indexOf('\n');
        String first = end < 0 ? message : message.substring(0, end);
        return first.isBlank() ? "cannot be read" : first.toLowerCase(Locale.ROOT);
    }

    // The parts of the documents the tracker reads, as every version from v0.0.40 writes them (snake_case names).

    record Meta(Plugin plugin, SlurmRelease slurm) {}

    record Plugin(String dataParser) {}

    record SlurmRelease(String release) {}

    record NodeDocument(Meta meta, List<NodeEntry> nodes, List<JsonNode> errors) {}

    record NodeEntry(
            String name,
            List<String> state,
            int cpus,
            int allocCpus,
            List<String> partitions,
            String gres,
            String gresUsed) {}

    record JobDocument(Meta meta, List<JobEntry> jobs, List<JsonNode> errors) {}

    record JobEntry(
            long jobId,
            String name,
            String userName,
            List<String> jobState,
            String stateReason,
            String partition,
            SlurmNumber priority,
            SlurmNumber minimumCpusPerNode,
            String tresPerNode,
            List<String> gresDetail,
            JsonNode jobResources) {}

    /** Slurm's number that may be unset or infinite: {@code {"set": true, "infinite": false, "number": 1}}. */
    record SlurmNumber(boolean set, boolean infinite, long number) {
        long value(String where, String field) {
            if (!set || infinite) {
                throw SlurmException.badOutput(
                        where, "'" + field + "' is " + (set ? "infinite" : "not set") + ", expected a number");
            }
            return number;
        }
    }

    /** v0.0.40's job_resources. */
    record ResourcesByNodename(List<NodenameEntry> allocatedNodes) {}

    record NodenameEntry(String nodename) {}

    /** v0.0.41's and v0.0.42's job_resources. */
    record ResourcesByAllocation(AllocationList nodes) {}

    record AllocationList(List<AllocationEntry> allocation) {}

    record AllocationEntry(String name) {}
}
