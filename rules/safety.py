"""Functions a rule file may not call unless unsafe use is allowed.

They reach the operating system (processes, files, the working directory), end the
process, or turn strings into code (which would defeat this static check).
"""

from __future__ import annotations

UNSAFE_FUNCTIONS: dict[str, str] = {
    "system": "runs a shell command",
    "open": "opens a file",
    "close": "closes a file router",
    "remove": "deletes a file",
    "rename": "renames a file",
    "chdir": "changes the working directory",
    "load": "loads constructs from a file",
    "load*": "loads constructs from a file",
    "load-facts": "reads facts from a file",
    "load-instances": "reads instances from a file",
    "restore-instances": "reads instances from a file",
    "bload": "loads a binary image from a file",
    "bload-facts": "reads facts from a file",
    "bload-instances": "reads instances from a file",
    "batch": "executes commands from a file",
    "batch*": "executes commands from a file",
    "save": "writes a file",
    "save-facts": "writes a file",
    "save-instances": "writes a file",
    "bsave": "writes a file",
    "bsave-facts": "writes a file",
    "bsave-instances": "writes a file",
    "dribble-on": "writes a file",
    "dribble-off": "closes a dribble file",
    "constructs-to-c": "writes C source files",
    "with-open-file": "opens a file",
    "eval": "evaluates a string as code",
    "build": "builds a construct from a string",
    "funcall": "calls a function chosen at run time",
    "python-function": "calls Python directly (register Python functions explicitly instead)",
    "exit": "terminates the process",
    # CLIPS's text-processing functions read any file named by the rule (help-file format shows its
    # content; for other files the error tells whether the file exists)
    "fetch": "reads a file into memory",
    "toss": "unloads a file fetched into memory",
    "get-region": "reads a region of a fetched file",
    "print-region": "prints a region of a file",
}
