package org.vgpu.tracker.slurm;

import java.util.List;
import java.util.Optional;
import java.util.function.Supplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Chooses how the tracker reads {@code scontrol show node/job -d} from the Slurm it finds: the JSON of the newest
 * data_parser version that both that Slurm offers and the tracker reads ({@link DataParser}), else the text.
 * Slurm releases before 23.02 have no data_parser and print only the text.
 */
public final class ScontrolReaders {
    /** {@code scontrol --version}: {@code slurm 24.11.5}, Debian's {@code slurm-wlm 24.11.5}. */
    private static final Pattern VERSION = Pattern.compile("slurm(?:-wlm)? (\\d+)\\.(\\d+)\\.(\\d+)\\S*");

    private static final Pattern DATA_PARSER = Pattern.compile("data_parser/(v\\d+\\.\\d+\\.\\d+)");

    /** The first release with data_parser plugins and {@code --json=VERSION}. */
    private static final int FIRST_WITH_DATA_PARSER = 23_02;

    private ScontrolReaders() {}

    /**
     * The reader chosen, and why, for the log.
     *
     * @param fallback the text of a Slurm that has data_parsers, but none the tracker reads: worth a warning
     */
    public record Choice(ScontrolReader reader, String reason, boolean fallback) {}

    /**
     * @param versionOutput what {@code scontrol --version} printed
     * @param dataParsers   what {@code scontrol --json=list} prints (asked only of a Slurm that has data_parsers)
     * @throws SlurmException when the version output is not {@code slurm MAJOR.MINOR.MICRO}
     */
    public static Choice choose(String versionOutput, Supplier<String> dataParsers) {
        String version = versionOutput.strip();
        Matcher matcher = VERSION.matcher(version);
        if (!matcher.matches()) {
            throw SlurmException.badOutput(
                    "scontrol --version",
                    "'" + version + "', expected 'slurm MAJOR.MINOR.MICRO' such as 'slurm 24.11.5'");
        }
        String release = matcher.group(1) + "." + matcher.group(2) + "." + matcher.group(3);
        int yearMonth = Integer.parseInt(matcher.group(1)) * 100 + Integer.parseInt(matcher.group(2));
        if (yearMonth < FIRST_WITH_DATA_PARSER) {
            return new Choice(
                    new ScontrolText(),
                    "Slurm " + release + " has no data_parser (they came with 23.02): reading text",
                    false);
        }
        List<String> offered = DATA_PARSER
                .matcher(dataParsers.get())
                .results()
                .map(result -> result.group(1))
                .toList();
        Optional<DataParser> parser = DataParser.newestOf(offered);
        if (parser.isPresent()) {
            return new Choice(
                    new ScontrolJson(parser.get()),
                    "Slurm " + release + " offers data_parser " + String.join(", ", offered) + ": reading JSON of "
                            + parser.get().version(),
                    false);
        }
        return new Choice(
                new ScontrolText(),
                "Slurm " + release + " offers data_parser "
                        + (offered.isEmpty() ? "(none listed)" : String.join(", ", offered))
                        + ", none of those this tracker reads (" + String.join(", ", DataParser.known())
                        + "): reading text",
                true);
    }
}
