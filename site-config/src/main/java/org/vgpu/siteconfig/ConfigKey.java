package org.vgpu.siteconfig;

import java.util.Objects;
import java.util.Optional;
import java.util.function.Function;

/**
 * One key of the site configuration: its section, name, the values it takes, its default and what it means. The
 * reader parses and checks it by this description, and site-config/README.md's key reference is this description
 * written out (see {@link ConfigKeys}).
 *
 * @param <T> what a value of the key is read into
 */
final class ConfigKey<T> {
    /**
     * The values of a key: how README names them, the parser that reads one and the formatter that writes one back as
     * the parser reads it (see {@link ConfigValues}).
     */
    record Type<T>(String description, Function<String, T> parser, Function<T, String> formatter) {
        Type {
            Objects.requireNonNull(description, "description");
            Objects.requireNonNull(parser, "parser");
            Objects.requireNonNull(formatter, "formatter");
        }

        /** A type whose values are written as they are read (names, device file lists). */
        static Type<String> verbatim(String description, Function<String, String> parser) {
            return new Type<>(description, parser, value -> value);
        }
    }

    /** Whether a file must set the key, and what holds when it does not. */
    private enum Presence {
        /** The file must set it. */
        REQUIRED,
        /** Unset, the key's default text, read as a value would be, holds. */
        DEFAULTED,
        /** Unset, nothing is set: the default text says what follows. */
        OPTIONAL
    }

    private final String section;
    private final String name;
    private final Type<T> type;
    private final String note;
    private final Presence presence;
    private final String defaultText;
    private final String meaning;

    private ConfigKey(
            String section,
            String name,
            Type<T> type,
            String note,
            Presence presence,
            String defaultText,
            String meaning) {
        this.section = Objects.requireNonNull(section, "section");
        this.name = Objects.requireNonNull(name, "name");
        this.type = Objects.requireNonNull(type, "type");
        this.note = Objects.requireNonNull(note, "note");
        this.presence = presence;
        this.defaultText = Objects.requireNonNull(defaultText, "defaultText");
        this.meaning = Objects.requireNonNull(meaning, "meaning");
        if (presence == Presence.DEFAULTED) {
            // A default the key's own parser refuses is a bug of the table: fail when the class loads.
            Objects.requireNonNull(type.parser().apply(defaultText), "the default's value");
        }
    }

    /** A key the file must set; {@code meaning} also completes the message that it is missing. */
    static <T> ConfigKey<T> required(String section, String name, Type<T> type, String note, String meaning) {
        return new ConfigKey<>(section, name, type, note, Presence.REQUIRED, "required", meaning);
    }

    /** A key that takes {@code defaultValue} (as the file would write it) when the file does not set it. */
    static <T> ConfigKey<T> defaulted(
            String section, String name, Type<T> type, String note, String defaultValue, String meaning) {
        return new ConfigKey<>(section, name, type, note, Presence.DEFAULTED, defaultValue, meaning);
    }

    /** A key that may be left unset; {@code unset} says what follows then. */
    static <T> ConfigKey<T> optional(
            String section, String name, Type<T> type, String note, String unset, String meaning) {
        return new ConfigKey<>(section, name, type, note, Presence.OPTIONAL, unset, meaning);
    }

    String section() {
        return section;
    }

    String name() {
        return name;
    }

    boolean isRequired() {
        return presence == Presence.REQUIRED;
    }

    /** A value as a file writes it, which {@link #parse} reads back to the same value. */
    String format(T value) {
        return type.formatter().apply(value);
    }

    /** The value as the key's type reads it; {@link IllegalArgumentException} says what was expected. */
    T parse(String value) {
        return type.parser().apply(value);
    }

    /**
     * The value of a file that does not set the key.
     *
     * @throws IllegalStateException for a key that is required or has no default value
     */
    T defaultValue() {
        if (presence != Presence.DEFAULTED) {
            throw new IllegalStateException(name + " has no default value");
        }
        return parse(defaultText);
    }

    /** What the key takes, as README's reference says it: the type, and what more is asked of a value. */
    String valueText() {
        return note.isEmpty() ? type.description() : type.description() + "; " + note;
    }

    /** "required", the default value as a file writes it, or what holds when the key is unset. */
    String defaultText() {
        return defaultText;
    }

    String meaning() {
        return meaning;
    }

    /** The default as a file writes it, when there is one. */
    Optional<String> defaultValueText() {
        return presence == Presence.DEFAULTED ? Optional.of(defaultText) : Optional.empty();
    }

    @Override
    public String toString() {
        return "[" + section + "] " + name;
    }
}
