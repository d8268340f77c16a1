"""``cairn completion bash|zsh|fish|powershell``: a completion script for each shell, drawn
from the command line's own argparse parsers when it is asked for, so it never drifts from
the commands that exist.

Every script embeds one table, a command path ("", "workspace", "knowledge set"…) → the
words that may follow it (its subcommands, or a positional's choices) and its options; the
shell walks the words typed so far through the table.  Where no word is known, the shell
completes file names (a FILE, a PATH).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field

from app.cli.output import Commands

SHELLS = ("bash", "zsh", "fish", "powershell")


@dataclass
class Node:
    words: list[str] = field(default_factory=list)  # subcommands, or a positional's choices
    options: list[str] = field(default_factory=list)


def table(parser: argparse.ArgumentParser) -> dict[str, Node]:
    """Every command path of *parser* and what may follow it, in the parsers' own order."""
    found: dict[str, Node] = {}

    def walk(path: str, p: argparse.ArgumentParser) -> None:
        node = found.setdefault(path, Node())
        for action in p._actions:  # noqa: SLF001 - argparse has no public walk of its parsers
            if action.option_strings:
                if action.help != argparse.SUPPRESS:
                    node.options += action.option_strings
            elif isinstance(action, argparse._SubParsersAction):  # noqa: SLF001
                for name, sub in action.choices.items():
                    node.words.append(name)
                    walk(f"{path} {name}".strip(), sub)
            elif action.choices:
                node.words += [str(c) for c in action.choices]

    walk("", parser)
    return found


def script(shell: str, parser: argparse.ArgumentParser) -> str:
    nodes = table(parser)
    return {"bash": _bash, "zsh": _zsh, "fish": _fish, "powershell": _powershell}[shell](nodes)


def _cases(nodes: dict[str, Node], line: str) -> str:
    return "".join(line.format(path=path, words=" ".join(n.words), options=" ".join(n.options))
                   for path, n in nodes.items())


def _bash(nodes: dict[str, Node]) -> str:
    return f"""# cairn completion for bash: add `eval "$(cairn completion bash)"` to ~/.bashrc
_cairn_words() {{
    case "$1" in
{_cases(nodes, '        "{path}") echo "{words}" ;;' + chr(10))}    esac
}}
_cairn_options() {{
    case "$1" in
{_cases(nodes, '        "{path}") echo "{options}" ;;' + chr(10))}    esac
}}
_cairn() {{
    local cur="${{COMP_WORDS[COMP_CWORD]}}" at="" w i words
    for ((i = 1; i < COMP_CWORD; i++)); do
        w="${{COMP_WORDS[i]}}"
        words=" $(_cairn_words "$at") "
        if [[ "$w" != -* && "$words" == *" $w "* ]]; then at="${{at:+$at }}$w"; fi
    done
    words="$(_cairn_words "$at")"
    if [[ "$cur" == -* ]]; then
        COMPREPLY=($(compgen -W "$(_cairn_options "$at")" -- "$cur"))
    elif [[ -n "$words" ]]; then
        COMPREPLY=($(compgen -W "$words" -- "$cur"))
    else
        COMPREPLY=($(compgen -f -- "$cur"))
    fi
}}
complete -o filenames -F _cairn cairn
"""


def _zsh(nodes: dict[str, Node]) -> str:
    # ($path is taken in zsh: it is tied to $PATH.)
    return f"""#compdef cairn
# cairn completion for zsh: `cairn completion zsh > "${{fpath[1]}}/_cairn"`, or add
# `eval "$(cairn completion zsh)"` to ~/.zshrc after compinit
_cairn_words() {{
    case "$1" in
{_cases(nodes, '        "{path}") echo "{words}" ;;' + chr(10))}    esac
}}
_cairn_options() {{
    case "$1" in
{_cases(nodes, '        "{path}") echo "{options}" ;;' + chr(10))}    esac
}}
_cairn() {{
    local at="" w i known
    for ((i = 2; i < CURRENT; i++)); do
        w="${{words[i]}}"
        known=" $(_cairn_words "$at") "
        if [[ "$w" != -* && "$known" == *" $w "* ]]; then at="${{at:+$at }}$w"; fi
    done
    known="$(_cairn_words "$at")"
    if [[ "$PREFIX" == -* ]]; then
        compadd -- ${{=$(_cairn_options "$at")}}
    elif [[ -n "$known" ]]; then
        compadd -- ${{=known}}
    else
        _files
    fi
}}
compdef _cairn cairn
"""


def _fish(nodes: dict[str, Node]) -> str:
    return f"""# cairn completion for fish: `cairn completion fish > ~/.config/fish/completions/cairn.fish`
function __cairn_words
    switch "$argv[1]"
{_cases(nodes, "        case '{path}'" + chr(10) + "            echo {words}" + chr(10))}    end
end
function __cairn_options
    switch "$argv[1]"
{_cases(nodes, "        case '{path}'" + chr(10) + "            echo {options}" + chr(10))}    end
end
function __cairn_at
    set -l at ''
    set -l typed (commandline -opc)
    set -e typed[1]  # cairn itself
    for w in $typed
        if not string match -q -- '-*' $w; and contains -- $w (string split ' ' (__cairn_words "$at"))
            set at (string trim "$at $w")
        end
    end
    echo $at
end
function __cairn_has_words
    set -l known (__cairn_words (__cairn_at))
    test -n "$known"
end
complete -c cairn -f -n '__cairn_has_words' -a '(string split " " (__cairn_words (__cairn_at)))'
complete -c cairn -F -n 'not __cairn_has_words'
complete -c cairn -f -n 'string match -q -- "-*" (commandline -ct)' -a '(string split " " (__cairn_options (__cairn_at)))'
"""


def _powershell(nodes: dict[str, Node]) -> str:
    def entries(kind: str) -> str:
        return "".join(f"        '{path}' = '{' '.join(getattr(n, kind))}'\n"
                       for path, n in nodes.items())

    # (The tables live inside the script block: it runs later, in a scope of its own.)
    return f"""# cairn completion for PowerShell: add `cairn completion powershell | Out-String | Invoke-Expression` to $PROFILE
Register-ArgumentCompleter -Native -CommandName cairn, cairn.exe, cairn.com -ScriptBlock {{
    param($wordToComplete, $commandAst, $cursorPosition)
    $CairnWords = @{{
{entries('words')}    }}
    $CairnOptions = @{{
{entries('options')}    }}
    $at = ''
    foreach ($element in $commandAst.CommandElements | Select-Object -Skip 1) {{
        if ($element.Extent.EndOffset -ge $cursorPosition) {{ break }}  # the word completed
        $w = $element.ToString()
        if (-not $w.StartsWith('-') -and ($CairnWords[$at] -split ' ') -contains $w) {{
            $at = ("$at $w").Trim()
        }}
    }}
    $known = if ($wordToComplete.StartsWith('-')) {{ $CairnOptions[$at] }} else {{ $CairnWords[$at] }}
    if (-not $known) {{ return }}  # PowerShell then completes file names
    $known -split ' ' | Where-Object {{ $_ -like "$wordToComplete*" }} | ForEach-Object {{
        [System.Management.Automation.CompletionResult]::new($_, $_, 'ParameterValue', $_)
    }}
}}
"""


def add_parser(commands: Commands) -> None:
    p = commands.add_parser("completion", help="print a shell completion script (bash, zsh, "
                                               "fish, powershell)")
    p.add_argument("shell", metavar="SHELL", choices=SHELLS)
