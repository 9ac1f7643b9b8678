#!/usr/bin/env python3
"""Writes the library's entry points from the CUDA toolkit's own headers and entry-points.conf.

Every driver entry point a program can reach is described once, by the toolkit that built the
program: cudaTypedefs.h gives each (name, version, stream variant) that cuGetProcAddress hands out,
with its parameters; cuda.h gives each symbol a program linked with -lcuda calls directly.
entry-points.conf says what vgpu does with them. From these this script writes, into the build
directory:
  entry_points.h   the list of entry point names (one id each), with vgpu's disposition
  proc_entries.c   one typed function per cuGetProcAddress entry, and the lookup table
  exports.c        one typed function per exported symbol of today's names
  legacy_exports.c one per exported symbol of the names older programs and libraries still call by
                   dlsym (cuCtxPushCurrent for cuCtxPushCurrent_v2, ...), as cuda.h declares them
                   for the driver's own build (__CUDA_API_VERSION_INTERNAL)
  served.h         the prototype of each entry point vgpu serves itself (src/served_*.c implement them)
  errors.c         the name and description of every CUresult, from cuda.h's own comments
Each function counts its call, then calls what serves it: on a vGPU (the library serving), vgpu's
own implementation of an entry point entry-points.conf says it serves, or a refusal naming the call;
otherwise the real driver.

Usage: entry_points.py TYPEDEFS CUDA_H CUDA_H_PTDS CUDA_H_INTERNAL RAW_CUDA_H CONF OUTDIR
(the four inputs are `cc -E -P` of cudaTypedefs.h, of cuda.h, of cuda.h with
CUDA_API_PER_THREAD_DEFAULT_STREAM defined, and of cuda.h with __CUDA_API_VERSION_INTERNAL defined;
RAW_CUDA_H is cuda.h itself, for the error codes' descriptions).
"""
import fnmatch
import os
import re
import sys

PFN = re.compile(r'typedef (\w+) ?\( ?\* ?PFN_(\w+?)_v(\d+)(_ptds|_ptsz)?\)\((.*?)\);')
PROTO = re.compile(r'(?:extern )?CUresult (cu\w+) ?\(([^;{}]*?)\);')
SUFFIX = re.compile(r'(_v\d+)?(_ptds|_ptsz)?$')
# Ours, not generated: how a program finds the others, and the tables behind them.
OWN = {'cuGetProcAddress', 'cuGetExportTable'}


def squash(text):
    return re.sub(r'\s+', ' ', text)


def params(text):
    """(declaration list, argument names) of a C parameter list that names every parameter."""
    text = text.strip()
    if text in ('', 'void'):
        return 'void', ''
    names = []
    for part in text.split(','):
        match = re.search(r'(\w+)\s*(\[\s*\d*\s*\])?\s*$', part.strip())
        if not match:
            sys.exit(f'entry_points.py: cannot name the parameter "{part}"')
        names.append(match.group(1))
    return text, ', '.join(names)


VERSIONED_TYPE = re.compile(r'\b(CU\w+?_v\d+)\b')
# CUDA's versioned type names that are the very type of today's name (typedef CUdevice_v1 CUdevice;),
# read from cuda.h; CUdeviceptr_v1 (32 bits) is not one of them.
TYPE_ALIASES = {}


def read_type_aliases(preprocessed_cuda_h):
    for versioned, plain in re.findall(r'typedef (CU\w+_v\d+) (CU\w+);', squash(open(preprocessed_cuda_h, encoding='utf-8').read())):
        if versioned.startswith(plain + '_v'):
            TYPE_ALIASES[versioned] = plain


def parameter_types(decl):
    """The types of a parameter list, with CUDA's versioned type names (CUdevice_v1, CUdeviceptr_v2)
    read as the names they are typedefs of, to tell whether two functions take the same arguments."""
    if decl == 'void':
        return ()
    types = []
    for part in decl.split(','):
        part = VERSIONED_TYPE.sub(lambda m: TYPE_ALIASES.get(m.group(1), m.group(1)), part.strip())
        types.append(re.sub(r'\s+', ' ', re.sub(r'\w+\s*(\[\s*\d*\s*\])?\s*$', '', part)).replace(' *', '*').strip())
    return tuple(types)


def served_function(name, version, newest):
    """What src/served_*.c call vgpu's implementation of a served function: by its name for the newest
    arguments, with the version added for older arguments the driver still answers."""
    return f'vgpu_served_{name}' if version == newest else f'vgpu_served_{name}_v{version}'


def serving_branch(name, decl, args, served, ids):
    """The first statement of a generated function: on a vGPU, vgpu's own implementation of name when it
    serves it with these arguments, else a refusal naming the call."""
    for version, served_decl in served.get(name, ()):
        if parameter_types(decl) == parameter_types(served_decl):
            # the clock is read in a statement of its own: C leaves the order of a call's arguments open
            call = f'{served_function(name, version, served[name][0][0])}({args})'
            return (f'    if (vgpu_serves_this_thread()) {{\n        uint64_t started = vgpu_call_clock();\n'
                    f'        return vgpu_served_result({ids[name]}, started, {call});\n    }}\n')
    return f'    if (vgpu_serves_this_thread()) {{\n        return vgpu_refuse({ids[name]});\n    }}\n'


def passed_call(call, entry_id):
    """The last statement of a generated function: the node's driver's call, timed when a report is asked for."""
    return (f'    uint64_t started = vgpu_call_clock();\n'
            f'    return vgpu_timed_result({entry_id}, started, {call});\n}}\n\n')


def write_error_table(raw_cuda_h, path):
    text = open(raw_cuda_h, encoding='utf-8').read()
    body = text[text.index('typedef enum cudaError_enum {'):]
    body = body[:body.index('} CUresult;')]
    codes = re.findall(r'/\*\*(.*?)\*/\s*(CUDA_\w+)\s*=\s*(\d+)', body, re.S)
    if len(codes) < 50:
        sys.exit(f'entry_points.py: found only {len(codes)} error codes in {raw_cuda_h}')
    with open(path, 'w', encoding='utf-8') as out:
        out.write('/* Generated by generate/entry_points.py from cuda.h: every CUresult, its name and description. */\n')
        out.write('#include "libcuda_internal.h"\n\nconst struct vgpu_error_text vgpu_error_texts[] = {\n')
        for comment, name, number in codes:
            words = ' '.join(line.strip().lstrip('*').strip() for line in comment.strip().splitlines())
            words = re.sub(r'::(\w+)\(\)', r'\1()', words).replace('::', '')
            sentence = re.split(r'(?<=[a-z0-9)])\. ', words + ' ', maxsplit=1)[0].strip().rstrip('.')
            sentence = sentence.replace('\\', '\\\\').replace('"', '\\"')
            out.write(f'    {{{number}, "{name}", "{sentence}"}},\n')
        out.write('};\nconst size_t vgpu_error_text_count = sizeof vgpu_error_texts / sizeof vgpu_error_texts[0];\n')
    return len(codes)


def base_name(symbol):
    return SUFFIX.sub('', symbol)


def read_conf(path):
    rules = []
    with open(path, encoding='utf-8') as conf:
        for number, line in enumerate(conf, 1):
            line = line.split('#', 1)[0].strip()
            if not line:
                continue
            fields = line.split(None, 2)
            if len(fields) < 3 or fields[0] not in ('refuse', 'serve'):
                sys.exit(f'{path}:{number}: expected "refuse|serve PATTERN REASON", got "{line}"')
            rules.append((fields[0], fields[1], fields[2].replace('"', "'"), number))
    return rules


def disposition(rules, name):
    for kind, pattern, reason, _ in rules:
        if fnmatch.fnmatchcase(name, pattern):
            return kind, reason
    return 'pass', ''


def write_exports(path, exports, ids, table_name, preamble, served):
    with open(path, 'w', encoding='utf-8') as out:
        out.write('/* Generated by generate/entry_points.py from cuda.h: one function per exported symbol. */\n')
        out.write(f'{preamble}#include "served.h"\n\n')
        table = []
        for symbol in sorted(exports):
            base = base_name(symbol)
            if base in OWN:
                continue
            decl, args = exports[symbol]
            out.write(f'CUresult CUDAAPI {symbol}({decl});\n')
            out.write(f'static CUresult (*real_{symbol})({decl});\n')
            out.write(f'VGPU_EXPORT CUresult CUDAAPI {symbol}({decl})\n{{\n    vgpu_count({ids[base]});\n')
            out.write(serving_branch(base, decl, args, served, ids))
            out.write(f'    if (real_{symbol} == NULL) {{\n        return vgpu_unresolved("{symbol}");\n    }}\n')
            out.write(passed_call(f'real_{symbol}({args})', ids[base]))
            table.append(f'    {{"{symbol}", (void **)&real_{symbol}}},\n')
        out.write(f'const struct vgpu_export {table_name}[] = {{\n{"".join(table)}}};\n')
        out.write(f'const size_t {table_name[:-1]}_count = sizeof {table_name} / sizeof {table_name}[0];\n')


def main(typedefs_path, cuda_h_path, cuda_h_ptds_path, cuda_h_internal_path, raw_cuda_h, conf_path, outdir):
    read_type_aliases(cuda_h_path)
    typedefs = squash(open(typedefs_path, encoding='utf-8').read())
    entries = []
    for ret, name, version, variant, plist in PFN.findall(typedefs):
        if ret != 'CUresult':
            sys.exit(f'entry_points.py: PFN_{name}_v{version} returns {ret}, not CUresult')
        decl, args = params(plist)
        entries.append((name, int(version), variant, decl, args))
    exports = {}
    for path in (cuda_h_path, cuda_h_ptds_path):
        for symbol, plist in PROTO.findall(squash(open(path, encoding='utf-8').read())):
            if symbol not in exports:
                exports[symbol] = params(plist)
    legacy = {}
    for symbol, plist in PROTO.findall(squash(open(cuda_h_internal_path, encoding='utf-8').read())):
        if symbol not in exports and symbol not in legacy:
            legacy[symbol] = params(plist)
    rules = read_conf(conf_path)
    names = sorted({e[0] for e in entries} | {base_name(s) for s in exports} | {base_name(s) for s in legacy})
    for kind, pattern, _, number in rules:
        if not any(fnmatch.fnmatchcase(n, pattern) for n in names):
            sys.exit(f'{conf_path}:{number}: "{pattern}" names no entry point of this toolkit')
    ids = {n: i for i, n in enumerate(names)}
    # what vgpu serves: each served name with each list of arguments its functions take, newest first
    served = {}
    for name, version, variant, decl, args in sorted(entries, key=lambda e: -e[1]):
        if disposition(rules, name)[0] == 'serve' and variant == '':
            known = served.setdefault(name, [])
            if all(parameter_types(decl) != parameter_types(other) for _, other in known):
                known.append((version, decl))
    unserved = [n for n in names if disposition(rules, n)[0] == 'serve' and n not in served]
    if unserved:
        sys.exit(f'{conf_path}: served entry points with no function in cudaTypedefs.h: {", ".join(unserved)}')
    with open(os.path.join(outdir, 'served.h'), 'w', encoding='utf-8') as out:
        out.write('/* Generated by generate/entry_points.py: the entry points vgpu serves on a vGPU (entry-points.conf). */\n')
        out.write('#ifndef VGPU_SERVED_H\n#define VGPU_SERVED_H\n#include "libcuda_internal.h"\n\n')
        for name in sorted(served):
            for version, decl in served[name]:
                out.write(f'CUresult {served_function(name, version, served[name][0][0])}({decl});\n')
        out.write('\n#endif\n')

    with open(os.path.join(outdir, 'entry_points.h'), 'w', encoding='utf-8') as out:
        out.write('/* Generated by generate/entry_points.py from the toolkit\'s headers and entry-points.conf. */\n')
        out.write(f'#define VGPU_ENTRY_POINT_COUNT {len(names)}\n')
        out.write('/* VGPU_ENTRY_POINT(id, name, disposition, reason) */\n#define VGPU_ENTRY_POINTS(X) \\\n')
        for n in names:
            kind, reason = disposition(rules, n)
            out.write(f'    X({ids[n]}, "{n}", VGPU_{kind.upper()}, "{reason}") \\\n')
        out.write('\n')

    with open(os.path.join(outdir, 'proc_entries.c'), 'w', encoding='utf-8') as out:
        out.write('/* Generated by generate/entry_points.py from cudaTypedefs.h: one function per entry point. */\n')
        out.write('#include "served.h"\n#include <cudaTypedefs.h>\n\n')
        table = []
        for name, version, variant, decl, args in entries:
            if name in OWN:
                continue
            pfn = f'PFN_{name}_v{version}{variant}'
            fn = f'proc_{name}_v{version}{variant}'
            out.write(f'static {pfn} real_{fn};\n')
            out.write(f'static CUresult CUDAAPI {fn}({decl})\n{{\n    vgpu_count({ids[name]});\n')
            out.write(serving_branch(name, decl, args, served, ids))
            out.write(f'    if (real_{fn} == NULL) {{\n        return vgpu_unresolved("{name}");\n    }}\n')
            out.write(passed_call(f'real_{fn}({args})', ids[name]))
            flavor = {'': 'VGPU_STREAM_LEGACY', '_ptds': 'VGPU_STREAM_PER_THREAD', '_ptsz': 'VGPU_STREAM_PER_THREAD'}[variant]
            table.append(f'    {{"{name}", {version}, {flavor}, {ids[name]}, (void *){fn}, (void **)&real_{fn}}},\n')
        out.write(f'const struct vgpu_proc_entry vgpu_proc_entries[] = {{\n{"".join(table)}}};\n')
        out.write('const size_t vgpu_proc_entry_count = sizeof vgpu_proc_entries / sizeof vgpu_proc_entries[0];\n')

    write_exports(os.path.join(outdir, 'exports.c'), exports, ids, 'vgpu_exports', '', served)
    write_exports(os.path.join(outdir, 'legacy_exports.c'), legacy, ids, 'vgpu_legacy_exports',
                  '#define __CUDA_API_VERSION_INTERNAL 1 /* the older names, declared as the driver declares them */\n',
                  served)
    errors = write_error_table(raw_cuda_h, os.path.join(outdir, 'errors.c'))
    print(f'entry_points.py: {len(names)} entry points ({len(served)} served on vGPUs), {len(entries)} lookup entries, '
          f'{len(exports)} + {len(legacy)} exported symbols, {errors} error codes')


if __name__ == '__main__':
    if len(sys.argv) != 8:
        sys.exit(__doc__)
    main(*sys.argv[1:])
