#!/bin/sh
# Generates the code of the bridge contract from limits.conf and grammar.conf (this folder):
#   sh generate.sh c FILE        the C header of the SPANK bridge (make: build/contract.h)
#   sh generate.sh java FOLDER   FOLDER/org/vgpu/common/contract/BridgeContract.java (Maven: vgpu-common)
# POSIX sh and awk only, so that building the plugin on a Slurm node needs no JDK and the Java build
# no C toolchain. A malformed line fails the generation, naming file and line.
set -eu
# VGPU_CONTRACT_DIR: another folder with the two files (make test-contract checks malformed ones).
here=${VGPU_CONTRACT_DIR:-$(cd "$(dirname "$0")" && pwd)}
case "${1:-}:${2:-}" in
c:?*) out=$2 ;;
java:?*) out=$2/org/vgpu/common/contract/BridgeContract.java ;;
*) echo "usage: generate.sh c HEADER | generate.sh java SOURCE-FOLDER" >&2; exit 2 ;;
esac
mkdir -p "$(dirname "$out")"
tmp=$out.tmp.$$
trap 'rm -f "$tmp"' EXIT
awk -v lang="$1" '
function fail(why) { printf "%s:%d: %s\n", FILENAME, FNR, why > "/dev/stderr"; failed = 1; exit 1 }
function quoted(s) { gsub(/\\/, "\\\\", s); gsub(/"/, "\\\"", s); return "\"" s "\"" }
function docline(s) {
	gsub(/\*\//, "* /", s)
	if (lang == "java") { gsub(/&/, "\\&amp;", s); gsub(/</, "\\&lt;", s); gsub(/>/, "\\&gt;", s); gsub(/@/, "\\&#64;", s) }
	return s
}
function doc(indent,   i, text) {
	if (ndoc == 0) return
	text = indent (lang == "java" ? "/**" : "/*")
	if (ndoc == 1) { print text " " docline(docs[1]) " */"; return }
	print text
	for (i = 1; i <= ndoc; i++) print indent " * " docline(docs[i])
	print indent " */"
}
function charclass(chars,   i, c, out) {
	out = "[A-Za-z0-9"
	for (i = 1; i <= length(chars); i++) { c = substr(chars, i, 1); out = out "\\\\" c }
	return out "]"
}
BEGIN {
	source = "slurm-spank-bridge/contract/limits.conf and grammar.conf"
	if (lang == "c") {
		print "/* Generated from " source " by generate.sh: do not edit. */"
		print "#ifndef VGPU_CONTRACT_H"
		print "#define VGPU_CONTRACT_H"
		print ""
		print "#include <stdint.h>"
	} else {
		print "// Generated from " source " by generate.sh: do not edit."
		print "package org.vgpu.common.contract;"
		print ""
		print "/**"
		print " * The tracker line protocol and the VGPU_* job environment, shared with the SPANK bridge (C): every"
		print " * limit, word and character set comes from slurm-spank-bridge/contract, the one source for both sides."
		print " */"
		print "public final class BridgeContract {"
		print "    private BridgeContract() {"
		print "    }"
	}
}
FNR == 1 { ndoc = 0 }
/^[ \t]*$/ { ndoc = 0; next }
/^#/ { line = $0; sub(/^# ?/, "", line); docs[++ndoc] = line; next }
{
	eq = index($0, " = ")
	if (eq == 0) fail("expected NAME = VALUE")
	name = substr($0, 1, eq - 1); value = substr($0, eq + 3)
	if (name !~ /^[a-z][a-z0-9_]*$/) fail("bad name \"" name "\"")
	if (value == "" || value ~ /^[ \t]|[ \t]$/) fail("empty value, or blanks around it")
	if (name in seen) fail(name " defined twice")
	if (FILENAME ~ /limits\.conf$/ && value !~ /^[0-9]+$/ && value !~ /^0x[0-9a-fA-F]+$/)
		fail("a limit must be a decimal or 0x-hexadecimal number, not \"" value "\"")
	seen[name] = 1
	upper = toupper(name)
	print ""
	if (value ~ /^[0-9]+$/ || value ~ /^0x[0-9a-fA-F]+$/) {
		wide = value ~ /^0x/ || length(value) > 10 || (length(value) == 10 && value > "2147483647")
		if (value ~ /^0[0-9]/) fail("leading zero in \"" value "\"")
		if (lang == "c") { doc(""); print "#define VGPU_" upper " " (wide ? "UINT64_C(" value ")" : value) }
		else { doc("    "); print "    public static final " (wide ? "long " : "int ") upper " = " value (wide ? "L" : "") ";" }
	} else if (name ~ /_chars$/) {
		if (value ~ /[A-Za-z0-9]/) fail("a *_chars value lists only what comes besides letters and digits")
		if (lang == "c") { doc(""); print "#define VGPU_" upper " " quoted(value) }
		else {
			doc("    "); print "    public static final String " upper " = " quoted(value) ";"
			pattern = upper; sub(/_CHARS$/, "_CHAR_CLASS", pattern)
			print "    /** One character of " upper ", as a regular expression. */"
			print "    public static final String " pattern " = \"" charclass(value) "\";"
		}
	} else {
		if (value !~ /^[ -~]+$/) fail("value is not printable ASCII")
		if (lang == "c") { doc(""); print "#define VGPU_" upper " " quoted(value) }
		else { doc("    "); print "    public static final String " upper " = " quoted(value) ";" }
	}
	ndoc = 0
}
END {
	if (failed) exit 1
	print ""
	print lang == "c" ? "#endif" : "}"
}
' "$here/limits.conf" "$here/grammar.conf" > "$tmp"
# An unchanged file keeps its time stamp, so that neither make nor javac redo their work.
if cmp -s "$tmp" "$out"; then
	rm -f "$tmp"
else
	mv "$tmp" "$out"
fi
trap - EXIT
