package org.vgpu.tracker.slurm;

import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * What Slurm says about nodes and jobs, parsed from the views the tracker reads: {@code scontrol
 * show node -d} and {@code scontrol show job -d}, or {@code sinfo --json} and {@code squeue --json}
 * (Slurm 22.05, openapi v0.0.38). Both views give equal records for the same cluster state.
 */
public record SlurmInventory(List<SlurmNode> nodes, List<SlurmJob> jobs) {
    private static final String SHOW_NODE = "scontrol show node -d";
    private static final String SHOW_JOB = "scontrol show job -d";
    private static final String SINFO_JSON = "sinfo --json";
    private static final String SQUEUE_JSON = "squeue --json";

    public SlurmInventory {
        nodes = List.copyOf(nodes);
        jobs = List.copyOf(jobs);
    }

    public static SlurmInventory fromScontrol(String showNodeDetails, String showJobDetails) {
        return new SlurmInventory(parseScontrolNodes(showNodeDetails), parseScontrolJobs(showJobDetails));
    }

    public static SlurmInventory fromJson(String sinfoJson, String squeueJson) {
        return new SlurmInventory(parseSinfoJson(sinfoJson), parseSqueueJson(squeueJson));
    }

    public Optional<SlurmNode> node(String name) {
        return nodes.stream().filter(node -> node.name().equals(name)).findFirst();
    }

    public Optional<SlurmJob> job(long id) {
        return jobs.stream().filter(job -> job.id() == id).findFirst();
    }

    /** @throws SlurmException when a node record lacks a field or has a malformed one */
    public static List<SlurmNode> parseScontrolNodes(String text) {
        List<SlurmNode> nodes = new ArrayList<>();
        for (ScontrolRecords.Record node : ScontrolRecords.parse(SHOW_NODE, text)) {
            String name = node.require("NodeName");
            String source = SHOW_NODE + " node " + name;
            nodes.add(new SlurmNode(
                    name,
                    node.require("State"),
                    (int) parseLong(source, "CPUTot", node.require("CPUTot")),
                    (int) parseLong(source, "CPUAlloc", node.require("CPUAlloc")),
                    splitList(node.first("Partitions").orElse("")),
                    GresItem.counts(GresItem.parseList(SHOW_NODE + " Gres of " + name, node.require("Gres"))),
                    GresItem.counts(GresItem.parseList(SHOW_NODE + " GresUsed of " + name, node.require("GresUsed")))));
        }
        return List.copyOf(nodes);
    }

    /** @throws SlurmException when a job record lacks a field or has a malformed one */
    public static List<SlurmJob> parseScontrolJobs(String text) {
        List<SlurmJob> jobs = new ArrayList<>();
        for (ScontrolRecords.Record job : ScontrolRecords.parse(SHOW_JOB, text)) {
            long id = parseLong(SHOW_JOB, "JobId", job.require("JobId"));
            String source = SHOW_JOB + " job " + id;
            List<SlurmJob.NodeAllocation> allocations = new ArrayList<>();
            String nodes = null;
            for (ScontrolRecords.Field field : job.fields()) {
                if (field.key().equals("Nodes")) {
                    nodes = field.value();
                } else if (field.key().equals("GRES") && nodes != null) {
                    List<GresItem> gres = GresItem.parseList(source + " GRES", field.value());
                    if (!gres.isEmpty()) {
                        allocations.add(new SlurmJob.NodeAllocation(nodes, gres));
                    }
                    nodes = null;
                }
            }
            // UserId=root(0): the name, without the uid.
            String user = job.require("UserId").replaceFirst("\\(\\d+\\)$", "");
            jobs.add(new SlurmJob(
                    id,
                    job.require("JobName"),
                    user,
                    job.require("JobState"),
                    job.require("Reason"),
                    job.require("Partition"),
                    parseLong(source, "Priority", job.require("Priority")),
                    (int) parseLong(source, "MinCPUsNode", job.require("MinCPUsNode")),
                    GresItem.counts(GresItem.parseList(
                            source + " TresPerNode", job.first("TresPerNode").orElse(""))),
                    allocations));
        }
        return List.copyOf(jobs);
    }

    /** @throws SlurmException for malformed JSON or a node without the fields used here */
    public static List<SlurmNode> parseSinfoJson(String json) {
        List<SlurmNode> nodes = new ArrayList<>();
        for (Object element : array(SINFO_JSON, document(SINFO_JSON, json), "nodes")) {
            Map<String, Object> node = object(SINFO_JSON, element, "a node");
            String name = string(SINFO_JSON, node, "name");
            String source = SINFO_JSON + " node " + name;
            List<String> state = new ArrayList<>();
            state.add(string(source, node, "state").toUpperCase(Locale.ROOT));
            for (Object flag : array(source, node, "state_flags")) {
                state.add(String.valueOf(flag));
            }
            List<String> partitions = array(source, node, "partitions").stream()
                    .map(String::valueOf)
                    .toList();
            nodes.add(new SlurmNode(
                    name,
                    String.join("+", state),
                    (int) number(source, node, "cpus"),
                    (int) number(source, node, "alloc_cpus"),
                    partitions,
                    GresItem.counts(GresItem.parseList(source + " gres", string(source, node, "gres"))),
                    GresItem.counts(GresItem.parseList(source + " gres_used", string(source, node, "gres_used")))));
        }
        return List.copyOf(nodes);
    }

    /** @throws SlurmException for malformed JSON or a job without the fields used here */
    public static List<SlurmJob> parseSqueueJson(String json) {
        List<SlurmJob> jobs = new ArrayList<>();
        for (Object element : array(SQUEUE_JSON, document(SQUEUE_JSON, json), "jobs")) {
            Map<String, Object> job = object(SQUEUE_JSON, element, "a job");
            long id = number(SQUEUE_JSON, job, "job_id");
            String source = SQUEUE_JSON + " job " + id;
            List<Object> details = array(source, job, "gres_detail");
            List<SlurmJob.NodeAllocation> allocations = new ArrayList<>();
            if (!details.isEmpty()) {
                // One gres_detail entry per allocated node, in the order of job_resources.allocated_nodes.
                List<Object> allocatedNodes =
                        array(source, object(source, job.get("job_resources"), "job_resources"), "allocated_nodes");
                if (allocatedNodes.size() != details.size()) {
                    throw SlurmException.badOutput(
                            source,
                            "has " + details.size() + " gres_detail entries for " + allocatedNodes.size()
                                    + " allocated nodes");
                }
                for (int i = 0; i < details.size(); i++) {
                    String node =
                            string(source, object(source, allocatedNodes.get(i), "an allocated node"), "nodename");
                    allocations.add(new SlurmJob.NodeAllocation(
                            node, GresItem.parseList(source + " gres_detail", String.valueOf(details.get(i)))));
                }
            }
            jobs.add(new SlurmJob(
                    id,
                    string(source, job, "name"),
                    string(source, job, "user_name"),
                    string(source, job, "job_state"),
                    string(source, job, "state_reason"),
                    string(source, job, "partition"),
                    number(source, job, "priority"),
                    (int) number(source, job, "minimum_cpus_per_node"),
                    GresItem.counts(
                            GresItem.parseList(source + " tres_per_node", string(source, job, "tres_per_node"))),
                    allocations));
        }
        return List.copyOf(jobs);
    }

    private static List<String> splitList(String text) {
        return text.isBlank() || text.equals("(null)")
                ? List.of()
                : List.of(text.strip().split(","));
    }

    private static long parseLong(String source, String key, String value) {
        try {
            return Long.parseLong(value);
        } catch (NumberFormatException e) {
            throw SlurmException.badOutput(source, key + "=" + value + " is not a number");
        }
    }

    private static Map<String, Object> document(String source, String json) {
        return object(source, Json.parse(source, json), "the document");
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> object(String source, Object value, String what) {
        if (!(value instanceof Map<?, ?>)) {
            throw SlurmException.badOutput(source, what + " is not a JSON object");
        }
        return (Map<String, Object>) value;
    }

    @SuppressWarnings("unchecked")
    private static List<Object> array(String source, Map<String, Object> object, String key) {
        if (!(object.get(key) instanceof List<?>)) {
            throw SlurmException.badOutput(
                    source, "'" + key + "' is " + describeMissing(object, key) + ", expected an array");
        }
        return (List<Object>) object.get(key);
    }

    private static String string(String source, Map<String, Object> object, String key) {
        if (!(object.get(key) instanceof String value)) {
            throw SlurmException.badOutput(
                    source, "'" + key + "' is " + describeMissing(object, key) + ", expected a string");
        }
        return value;
    }

    private static long number(String source, Map<String, Object> object, String key) {
        if (!(object.get(key) instanceof BigDecimal value)) {
            throw SlurmException.badOutput(
                    source, "'" + key + "' is " + describeMissing(object, key) + ", expected a number");
        }
        try {
            return value.longValueExact();
        } catch (ArithmeticException e) {
            throw SlurmException.badOutput(source, "'" + key + "' is " + value + ", expected a whole number");
        }
    }

    private static String describeMissing(Map<String, Object> object, String key) {
        return object.containsKey(key) ? Objects.toString(object.get(key)) : "missing";
    }
}
