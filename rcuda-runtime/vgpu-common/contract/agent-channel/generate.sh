#!/bin/sh
# Generates the code of the migration agent's channel from messages.conf (this folder):
#   sh generate.sh FOLDER   FOLDER/org/vgpu/common/agent/AgentChannelGrammar.java (Maven: vgpu-common)
# The words of the tracker protocol that the channel's forms use too (ok, error, local:, remote:) come from the
# bridge contract, slurm-spank-bridge/contract/grammar.conf. POSIX sh and awk only, as the bridge contract's
# generate.sh. A malformed line fails the generation, naming file and line.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
# VGPU_AGENT_CHANNEL_DIR: another folder with a messages.conf; VGPU_CONTRACT_DIR: another bridge contract.
messages=${VGPU_AGENT_CHANNEL_DIR:-$here}/messages.conf
bridge=${VGPU_CONTRACT_DIR:-$here/../../../../slurm-spank-bridge/contract}/grammar.conf
case "${1:-}" in
?*) out=$1/org/vgpu/common/agent/AgentChannelGrammar.java ;;
*) echo "usage: generate.sh SOURCE-FOLDER" >&2; exit 2 ;;
esac
mkdir -p "$(dirname "$out")"
tmp=$out.tmp.$$
trap 'rm -f "$tmp"' EXIT
awk '
function fail(why) { printf "%s:%d: %s\n", FILENAME, FNR, why > "/dev/stderr"; failed = 1; exit 1 }
function failAt(n, why) { printf "%s:%d: %s\n", source, lines[n], why > "/dev/stderr"; failed = 1; exit 1 }
function quoted(s) { gsub(/\\/, "\\\\", s); gsub(/"/, "\\\"", s); return "\"" s "\"" }
function docline(s) {
	gsub(/\*\//, "* /", s); gsub(/&/, "\\&amp;", s); gsub(/</, "\\&lt;", s); gsub(/>/, "\\&gt;", s); gsub(/@/, "\\&#64;", s)
	return s
}
function doc(n, extra,   i, count) {
	count = ndocs[n]
	if (count == 0 && extra == "") return
	print "    /**"
	for (i = 1; i <= count; i++) print "     * " docline(docs[n, i])
	if (extra != "") print "     * " extra
	print "     */"
}
function constant(s) { s = toupper(s); gsub(/-/, "_", s); return s }
function camel(s,   parts, count, i, out) {
	count = split(s, parts, /[-_]/)
	out = parts[1]
	for (i = 2; i <= count; i++) out = out toupper(substr(parts[i], 1, 1)) substr(parts[i], 2)
	return out
}
function claim(n, javaName) {
	if (javaName in claimed) failAt(n, "\"" javaName "\" is generated twice")
	claimed[javaName] = 1
}
# A form split at its spaces, a bracketed element kept whole: tokens[1..count].
function tokenize(value,   raw, rawCount, i, count, pending) {
	rawCount = split(value, raw, " ")
	count = 0; pending = ""
	for (i = 1; i <= rawCount; i++) {
		if (pending != "") { pending = pending " " raw[i] } else { pending = raw[i] }
		if (substr(pending, 1, 1) == "[" && substr(pending, length(pending)) != "]") continue
		tokens[++count] = pending; pending = ""
	}
	if (pending != "") return -1
	return count
}
function knownWord(text) { return text in known }
# The usage text of form or choice NAME: <x...> shown as <x>, {choice} spelled out.
function usage(name,   value, out, alternatives, count, i, start, width) {
	if (kindOf[name] == "choice") {
		count = split(valueOf[name], alternatives, / \| /)
		out = ""
		for (i = 1; i <= count; i++) out = out (i > 1 ? " | " : "") usage(alternatives[i])
		return out
	}
	value = valueOf[name]
	gsub(/\.\.\.>/, ">", value)
	while (match(value, /\{[a-z_]+\}/)) {
		start = RSTART; width = RLENGTH
		value = substr(value, 1, start - 1) usage(substr(value, start + 1, width - 2)) substr(value, start + width)
	}
	return value
}
# One element without spaces: words, <fields> and = , : joined. Appends the formatter parts; returns the fields.
function compact(n, element, separator,   rest, fieldCount, piece) {
	rest = element; fieldCount = 0
	while (rest != "") {
		if (match(rest, /^<[a-z][a-z-]*(\.\.\.)?>/)) {
			piece = substr(rest, 2, RLENGTH - 2); sub(/\.\.\.$/, "", piece)
			addParam(n, camel(piece), "Object"); addPart(camel(piece)); fieldCount++
			rest = substr(rest, RLENGTH + 1)
		} else if (match(rest, /^\{[a-z_]+\}/)) {
			piece = substr(rest, 2, RLENGTH - 2)
			if (kindOf[piece] != "choice") failAt(n, "{" piece "} names no choice")
			addParam(n, camel(piece), "Object"); addPart(camel(piece)); fieldCount++
			rest = substr(rest, RLENGTH + 1)
		} else {
			piece = rest; sub(/[<{].*/, "", piece)
			if (!knownWord(piece) && piece !~ /^[=,:]+$/) failAt(n, "\"" piece "\" is no word of the channel or the bridge contract")
			addLiteral(piece)
			rest = substr(rest, length(piece) + 1)
		}
	}
	return fieldCount
}
# The formatter as parts: literal text merged, the code of fields between.
function addLiteral(text) {
	if (partCount > 0 && literal[partCount] != "") { literal[partCount] = literal[partCount] text }
	else { partCount++; literal[partCount] = text; parts[partCount] = "" }
}
function addPart(expression) { partCount++; literal[partCount] = ""; parts[partCount] = expression }
function part(i) { return literal[i] != "" ? quoted(literal[i]) : parts[i] }
function addParam(n, param, type) {
	if ((n, param) in paramSeen) failAt(n, "field " param " twice in one form")
	paramSeen[n, param] = 1
	params = params (params == "" ? "" : ", ") type " " param
}
function form(n,   name, count, i, token, fixed, optionalSeen, field, prefix, upperName, fields) {
	name = names[n]; upperName = constant(name)
	count = tokenize(valueOf[name])
	if (count < 0) failAt(n, "an unclosed [")
	claim(n, upperName)
	doc(n, "")
	print "    static final String " upperName " = " quoted(usage(name)) ";"
	partCount = 0; params = ""; fixed = 0; optionalSeen = 0; fields = 0
	for (i = 1; i <= count; i++) {
		token = tokens[i]
		if (i > 1 && token !~ /^\[/) addLiteral(" ")
		if (token ~ /^\[<[a-z][a-z-]*> \.\.\.\]$/) {
			field = token; sub(/^\[</, "", field); sub(/> \.\.\.\]$/, "", field)
			addParam(n, camel(field) "s", "List<?>")
			addPart(camel(field) "s.stream().map(value -> \" \" + value).collect(Collectors.joining())")
			optionalSeen = 1; fields++
			continue
		}
		if (token ~ /^\[[^<]+<[a-z][a-z-]*>\]$/) {
			prefix = token; sub(/^\[/, "", prefix); sub(/<.*/, "", prefix)
			field = token; sub(/^[^<]*</, "", field); sub(/>\]$/, "", field)
			if (!knownWord(prefix)) failAt(n, "\"" prefix "\" is no word of the channel or the bridge contract")
			addParam(n, camel(field), "Optional<?>")
			addPart(camel(field) ".map(value -> " quoted(" " prefix) " + value).orElse(\"\")")
			optionalSeen = 1; fields++
			continue
		}
		if (token ~ /^\[/) failAt(n, "an optional element is [WORD<field>] or [<field> ...], not " token)
		if (optionalSeen) failAt(n, token " follows an optional element")
		if (token ~ /^[^<{]*[<{][a-z][a-z_-]*(\.\.\.)?[>}]$/) {
			prefix = token; sub(/[<{].*/, "", prefix)
			field = substr(token, length(prefix) + 2); sub(/(\.\.\.)?[>}]$/, "", field)
			if (prefix != "" && !knownWord(prefix)) failAt(n, "\"" prefix "\" is no word of the channel or the bridge contract")
			if (token ~ /\.\.\.>$/ && i != count) failAt(n, "<" field "...> is not the last element")
			if (token ~ /\}$/ && kindOf[field] != "choice") failAt(n, "{" field "} names no choice")
			if (prefix != "") addLiteral(prefix)
			addParam(n, camel(field), "Object"); addPart(camel(field))
			positions[++positionCount] = upperName "_" constant(field); positionAt[positionCount] = i - 1
			positionField[positionCount] = field
			fixed++; fields++
			continue
		}
		if (token ~ /[<{]/) {
			if (count > 1) failAt(n, "words, fields and punctuation are joined only in a form without spaces")
			fields += compact(n, token)
			fixed++
			continue
		}
		if (!knownWord(token)) failAt(n, "\"" token "\" is no word of the channel or the bridge contract")
		addLiteral(token)
		fixed++
	}
	if (count > 1) {
		for (i = 1; i <= positionCount; i++) {
			print "    /** Where " name " has its " positionField[i] ", counting fields from 0. */"
			claim(n, positions[i])
			print "    static final int " positions[i] " = " positionAt[i] ";"
		}
		claim(n, upperName "_FIELDS")
		print "    /** How many fields " name " has" (optionalSeen ? " before its optional ones" : "") ". */"
		print "    static final int " upperName "_FIELDS = " fixed ";"
	}
	positionCount = 0
	if (fields > 0) {
		print ""
		print "    /** The " name " of these fields, in their order. */"
		printf "    static String %s(%s) {\n", camel(name), params
		printf "        return "
		for (i = 1; i <= partCount; i++) printf "%s%s", (i > 1 ? " + " : ""), part(i)
		print ";"
		print "    }"
	}
}
BEGIN { source = "" }
FILENAME ~ /grammar\.conf$/ {
	if ($0 !~ /^#/ && index($0, " = ") > 0) known[substr($0, index($0, " = ") + 3)] = 1
	next
}
FNR == 1 { ndoc = 0; source = FILENAME }
/^[ \t]*$/ { ndoc = 0; next }
/^#/ { line = $0; sub(/^# ?/, "", line); pendingDocs[++ndoc] = line; next }
{
	eq = index($0, " = ")
	if (eq == 0) fail("expected KIND NAME = VALUE")
	headCount = split(substr($0, 1, eq - 1), head, " ")
	value = substr($0, eq + 3)
	if (headCount != 2 || head[1] !~ /^(word|limit|form|choice)$/) fail("expected word, limit, form or choice, then a name")
	name = head[2]
	if (name !~ /^[a-z][a-z0-9_]*$/) fail("bad name \"" name "\"")
	if (value == "" || value ~ /^[ \t]|[ \t]$|  /) fail("empty value, or blanks around it or doubled in it")
	if (value !~ /^[ -~]+$/) fail("value is not printable ASCII")
	if (name in kindOf) fail(name " defined twice")
	if (head[1] == "limit" && value !~ /^[1-9][0-9]*$/) fail("a limit is a decimal number, not \"" value "\"")
	if (head[1] == "word") {
		if (value ~ /[ <>{}\[\]|]/) fail("a word holds no space and none of <>{}[]|")
		known[value] = 1
	}
	count++
	names[count] = name; kindOf[name] = head[1]; valueOf[name] = value; lines[count] = FNR
	ndocs[count] = ndoc
	for (i = 1; i <= ndoc; i++) docs[count, i] = pendingDocs[i]
	ndoc = 0
}
END {
	if (failed) exit 1
	print "// Generated from rcuda-runtime/vgpu-common/contract/agent-channel/messages.conf by generate.sh: do not edit."
	print "package org.vgpu.common.agent;"
	print ""
	print "import java.util.List;"
	print "import java.util.Optional;"
	print "import java.util.stream.Collectors;"
	print ""
	print "/**"
	print " * The messages of the migration agent'"'"'s channel to the tracker as messages.conf describes them: the words, the"
	print " * limits, each form as usage text, where each field of a message is and a formatter that puts a message'"'"'s"
	print " * fields in the described order. The codec (AgentChannel) parses and formats with them on both ends."
	print " */"
	print "final class AgentChannelGrammar {"
	print "    private AgentChannelGrammar() {}"
	for (n = 1; n <= count; n++) {
		name = names[n]
		print ""
		if (kindOf[name] == "word") {
			claim(n, constant(name)); doc(n, "")
			print "    static final String " constant(name) " = " quoted(valueOf[name]) ";"
		} else if (kindOf[name] == "limit") {
			claim(n, constant(name)); doc(n, "")
			wide = length(valueOf[name]) > 10 || (length(valueOf[name]) == 10 && valueOf[name] > "2147483647")
			print "    static final " (wide ? "long " : "int ") constant(name) " = " valueOf[name] (wide ? "L" : "") ";"
		} else if (kindOf[name] == "choice") {
			alternativeCount = split(valueOf[name], alternatives, / \| /)
			for (i = 1; i <= alternativeCount; i++) {
				if (kindOf[alternatives[i]] != "form") failAt(n, "\"" alternatives[i] "\" is no form")
			}
			claim(n, constant(name))
			doc(n, "One of: " docline(valueOf[name]) ".")
			print "    static final String " constant(name) " = " quoted(usage(name)) ";"
		} else {
			form(n)
		}
	}
	print "}"
}
' "$bridge" "$messages" > "$tmp"
# An unchanged file keeps its time stamp, so that javac does not redo its work.
if cmp -s "$tmp" "$out"; then
	rm -f "$tmp"
else
	mv "$tmp" "$out"
fi
trap - EXIT
