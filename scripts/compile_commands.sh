#!/bin/sh
# Write compile_commands.json (for clangd and clang-tidy) from the kernel's
# real compiler and flags: scripts/compile_commands.sh CC "CFLAGS" FILE...
cc=$1
flags=$2
shift 2
dir=$(pwd)
echo "["
sep=""
for f in "$@"; do
    printf '%s  {"directory": "%s", "file": "%s", "command": "%s %s -c %s"}' \
        "$sep" "$dir" "$f" "$cc" "$(echo "$flags" | sed 's/"/\\"/g')" "$f"
    sep=",
"
done
echo
echo "]"
