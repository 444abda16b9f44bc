"""The FileSystem tools, each declared once: name, arguments, and the texts the model reads per contract.

`TOOLS` is the table; `model_function` makes a tool function from an entry for one `Shape`
(the contract and the options that change a schema), and `with_options` adds our options to
0.62.0's schemas. The toolset (`_toolset.py`) runs each tool's body; this module knows no engine.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping, Sequence
from copy import deepcopy
from dataclasses import KW_ONLY, dataclass, field, fields, replace
from typing import Any

from pydantic import ConfigDict
from pydantic_ai.exceptions import ModelRetry
from pydantic_ai.tools import RunContext

from pydantic_ai_harness_rs.filesystem._defaults import Contract

# --- edit_file's replacements ----------------------------------------------------------------


@dataclass
class Replacement:
    """One exact replacement: `old_text` must occur exactly once and is replaced by `new_text`."""

    _: KW_ONLY
    old_text: str
    new_text: str

    # Its fields have no docstrings to look up: without this, building a tool's schema (each
    # `FileSystem()`) parses this module's source for them (pydantic's `use_attribute_docstrings`),
    # which costs tens of ms and which CPython 3.11.7 can fail with a spurious `SystemError` deep
    # inside an event loop.
    __pydantic_config__ = ConfigDict(use_attribute_docstrings=False)


@dataclass
class FlaggedReplacement(Replacement):
    """One exact replacement: `old_text` must occur exactly once, or with `replace_all` every occurrence is replaced."""

    _: KW_ONLY
    replace_all: bool = False

    __pydantic_config__ = ConfigDict(use_attribute_docstrings=False)


EditPair = tuple[str, str] | tuple[str, str, bool]
"""`(old_text, new_text)`, or with `replace_all` (`FileSystem(replace_all=True)`) a third item."""


def replacement_pairs(
    old_text: str | None,
    new_text: str | None,
    replacements: Sequence[Replacement] | None,
    replace_all: bool | None = None,
) -> list[EditPair]:
    """The two argument forms of `edit_file` as one ordered list of `(old_text, new_text[, replace_all])`.

    `replace_all` is `None` when the tool has no such argument (the document's schema).

    Raises:
        ModelRetry: neither form is given, or both are, or `replacements` is empty.
    """
    if replacements is None:
        if old_text is None or new_text is None:
            raise ModelRetry('Provide old_text and new_text, or a non-empty replacements list.')
        return [(old_text, new_text) if replace_all is None else (old_text, new_text, replace_all)]
    if old_text is not None or new_text is not None or not replacements:
        raise ModelRetry('Provide either old_text and new_text or a non-empty replacements list, not both.')
    return [
        (r.old_text, r.new_text, r.replace_all) if isinstance(r, FlaggedReplacement) else (r.old_text, r.new_text)
        for r in replacements
    ]


def _edit_arguments(arguments: dict[str, Any]) -> dict[str, Any]:
    """`edit_file`'s model arguments as its body takes them: the two forms as one `replacements` list."""
    pairs = replacement_pairs(
        arguments.pop('old_text'),
        arguments.pop('new_text'),
        arguments['replacements'],
        arguments.pop('replace_all', None),
    )
    return {**arguments, 'replacements': pairs}


# --- the declaration of a tool ---------------------------------------------------------------


@dataclass(frozen=True)
class Shape:
    """What decides a tool's schema and texts: the contract, and the options that add or drop arguments.

    A new option is a field here (`metadata={'ours': True}` when beyond both references), and the
    `Param`s and `Text` variants that name it.
    """

    contract: Contract
    content_hashes: bool = True
    """Both references' option: without it no `expected_hash`, and no hash in the texts."""
    replace_all: bool = field(default=False, metadata={'ours': True})
    """Ours: `edit_file` and each `replacements` item take `replace_all`."""
    columns: bool = field(default=False, metadata={'ours': True})
    """Ours (`max_line_chars`): `read_file` takes `column`."""

    def described(self) -> Shape:
        """The shape the texts describe: 0.62.0's tools know none of our options, so under the
        workspace contract the model reads its texts and schemas, our arguments added (`with_options`)."""
        if self.contract == 'document':
            return self
        return replace(self, **{name: False for name in _OURS})


_OURS = tuple(f.name for f in fields(Shape) if f.metadata.get('ours'))
"""The options beyond both references (0.62.0's texts and schemas know none of them)."""


@dataclass(frozen=True)
class Text:
    """A text the model reads, with its variants.

    `workspace`: 0.62.0's wording (by default this text, with "`cwd`" read as "the working
    directory"); `unhashed`: with `content_hashes=False` (`''` leaves the text out);
    `replace_all`: with `replace_all=True` under the document.
    """

    text: str
    workspace: str | None = None
    unhashed: str | None = None
    replace_all: str | None = None

    def under(self, shape: Shape) -> str:
        if shape.replace_all and self.replace_all is not None:
            return self.replace_all
        if not shape.content_hashes and self.unhashed is not None:
            return self.unhashed
        if shape.contract == 'workspace':
            return self.text.replace('`cwd`', 'the working directory') if self.workspace is None else self.workspace
        return self.text


@dataclass(frozen=True)
class Param:
    """One argument of a tool: its type, default and description; `option` names the `Shape` field
    without which it does not exist, `typed` its type under an option (`{option: annotation}`)."""

    name: str
    annotation: Any
    doc: Text
    default: Any = inspect.Parameter.empty
    keyword_only: bool = True
    option: str | None = None
    typed: Mapping[str, Any] = field(default_factory=dict[str, Any])

    def parameter(self, shape: Shape) -> inspect.Parameter:
        annotation = next((a for option, a in self.typed.items() if getattr(shape, option)), self.annotation)
        kind = inspect.Parameter.KEYWORD_ONLY if self.keyword_only else inspect.Parameter.POSITIONAL_OR_KEYWORD
        return inspect.Parameter(self.name, kind, default=self.default, annotation=annotation)


@dataclass(frozen=True)
class ToolSpec:
    """A tool: its arguments and texts. Its body is the toolset's method `_<name>(engine, ctx, **arguments)`."""

    name: str
    summary: tuple[Text, ...]
    """Paragraphs of the description, before the arguments."""
    params: tuple[Param, ...]
    returns: Text | None = None
    prepare: Callable[[dict[str, Any]], dict[str, Any]] | None = None
    """The model's arguments as the body takes them (may raise `ModelRetry`)."""
    _: KW_ONLY
    read_only: bool = False
    """Changes nothing: kept by `read_only=True` and on a read-only workspace."""
    ripgrep: bool = False
    """Opt-in, with ripgrep's rules (ignore files, file types)."""
    opt_in: bool = False
    """Not in `DEFAULT_TOOL_NAMES`: registered only when `tools` names it (`apply_patch`)."""

    def docstring(self, shape: Shape, params: Sequence[Param]) -> str:
        """The tool function's docstring, from which Pydantic AI makes the description and the
        arguments' descriptions (Google style, as a hand-written docstring would be)."""
        lines = [
            '\n\n'.join(p.under(shape) for p in self.summary),
            '',
            'Args:',
            '    ctx: The current agent run context.',
        ]
        for param in params:
            first, *rest = param.doc.under(shape).split('\n')
            lines += [f'    {param.name}: {first}', *(f'        {line}' for line in rest)]
        if returns := self.returns and self.returns.under(shape):
            lines += ['', 'Returns:', *(f'    {line}' for line in returns.split('\n'))]
        return '\n'.join(lines)


_CTX = inspect.Parameter('ctx', inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=RunContext[Any])


def model_function(
    spec: ToolSpec, shape: Shape, call: Callable[[RunContext[Any], dict[str, Any]], Awaitable[Any]]
) -> Callable[..., Awaitable[Any]]:
    """`spec` as a tool function for `shape`, whose signature and docstring give the schema and
    the description; calling it awaits `call(ctx, arguments)` with every argument bound."""
    params = [p for p in spec.params if p.option is None or getattr(shape, p.option)]
    signature = inspect.Signature([_CTX, *(p.parameter(shape) for p in params)], return_annotation=str)

    async def tool(*args: Any, **kwargs: Any) -> Any:
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        arguments = dict(bound.arguments)
        ctx = arguments.pop('ctx')
        return await call(ctx, spec.prepare(arguments) if spec.prepare else arguments)

    tool.__signature__ = signature  # type: ignore[attr-defined]
    tool.__annotations__ = {p.name: p.annotation for p in signature.parameters.values()} | {'return': str}
    tool.__doc__ = spec.docstring(shape, params)
    tool.__name__ = tool.__qualname__ = spec.name
    return tool


def with_options(described: dict[str, Any], ours: dict[str, Any]) -> dict[str, Any]:
    """`described` (0.62.0's schema of a tool) with the arguments `ours` has beyond it appended:
    at the top level, and in each item definition (`$defs`) that one of `ours`' extends."""
    schema = deepcopy(described)
    extended = [d.get('properties', {}) for d in ours.get('$defs', {}).values()]
    for target, source in [
        (schema['properties'], ours['properties']),
        *(
            (d['properties'], e)
            for d in schema.get('$defs', {}).values()
            for e in extended
            if d.get('properties', {}).keys() < e.keys()
        ),
    ]:
        target.update({name: value for name, value in source.items() if name not in target})
    return schema


# --- the table -------------------------------------------------------------------------------

_PATH = Param('path', str, Text('File path relative to `cwd`.'), keyword_only=False)
_DIRECTORY = Param('path', str, Text('Directory path relative to `cwd`.'), keyword_only=False)
_SEARCHED = Param('path', str, Text('Directory to search in, relative to `cwd`.'), default='.')


def _optional(name: str, doc: str, annotation: Any = str | None) -> Param:
    return Param(name, annotation, Text(doc), default=None)


_EDIT_RULE = Text(
    'Pass one `old_text`/`new_text` pair, or several as `replacements`. Each\n'
    'old_text must appear exactly once in the file as edited by the previous\n'
    'replacements; include surrounding context lines to ensure uniqueness.\n'
    'The file is only written once every replacement has matched.',
    replace_all='Pass one `old_text`/`new_text` pair, or several as `replacements`. Each\n'
    'old_text must appear exactly once in the file as edited by the previous\n'
    'replacements, unless replace_all is set; include surrounding context\n'
    'lines to ensure uniqueness. The file is only written once every\n'
    'replacement has matched.',
)

TOOLS: dict[str, ToolSpec] = {
    spec.name: spec
    for spec in (
        ToolSpec(
            'read_file',
            (
                Text(
                    'Read a text file with line numbers.',
                    workspace='Read a text file with line numbers, or view an image or PDF.',
                ),
            ),
            (
                _PATH,
                Param('offset', int, Text('Zero-based line offset to start reading from.'), default=0),
                Param(
                    'limit',
                    int | None,
                    Text(
                        'Maximum number of lines to return (default: 2000).',
                        workspace='Maximum number of lines to return; defaults to, and is capped at, the configured '
                        'read limit.',
                    ),
                    default=None,
                ),
                Param(
                    'column',
                    int,
                    Text('Zero-based character each line starts from, to read on in a clipped long line.'),
                    default=0,
                    option='columns',
                ),
            ),
            Text(
                'File content with line numbers, plus metadata header.',
                workspace='File content with line numbers, plus metadata header. An image or PDF\n'
                'is returned as the file itself; other binary files as their size,\n'
                'media type and leading bytes in hex.',
            ),
            read_only=True,
        ),
        ToolSpec(
            'write_file',
            (
                Text(
                    'Create or overwrite a file with conflict detection.',
                    unhashed='Create a file or replace its whole content.',
                ),
            ),
            (
                _PATH,
                Param('content', str, Text('The text content to write.'), keyword_only=False),
                Param(
                    'expected_hash',
                    str | None,
                    Text(
                        'If provided, the write is rejected when the file exists\n'
                        "and its current hash doesn't match (optimistic concurrency)."
                    ),
                    default=None,
                    option='content_hashes',
                ),
            ),
            Text('Confirmation message with new hash.', unhashed=''),
        ),
        ToolSpec(
            'edit_file',
            (
                Text(
                    'Edit a file by exact string replacement with conflict detection.',
                    unhashed='Edit a file by exact string replacement.',
                ),
                _EDIT_RULE,
            ),
            (
                _PATH,
                Param(
                    'old_text',
                    str | None,
                    Text(
                        'The exact text to find (must appear exactly once).',
                        replace_all='The exact text to find (must appear exactly once, unless replace_all).',
                    ),
                    default=None,
                    keyword_only=False,
                ),
                Param('new_text', str | None, Text('The replacement text.'), default=None, keyword_only=False),
                Param(
                    'replace_all',
                    bool,
                    Text('Replace every occurrence of old_text instead of requiring exactly one.'),
                    default=False,
                    option='replace_all',
                ),
                Param(
                    'replacements',
                    list[Replacement] | None,
                    Text('Replacements to apply in order, instead of a single pair.'),
                    default=None,
                    typed={'replace_all': list[FlaggedReplacement] | None},
                ),
                Param(
                    'expected_hash',
                    str | None,
                    Text(
                        "If provided, rejects the edit when the file's\n"
                        "current hash doesn't match (optimistic concurrency)."
                    ),
                    default=None,
                    option='content_hashes',
                ),
            ),
            Text('Summary with new hash for subsequent operations.', unhashed=''),
            prepare=_edit_arguments,
        ),
        ToolSpec(
            'list_directory',
            (Text('List the contents of a directory.'),),
            (replace(_DIRECTORY, default='.'),),
            Text('Paths relative to `cwd`, with type indicators and sizes.'),
            read_only=True,
        ),
        ToolSpec(
            'search_files',
            (Text('Search file contents using a regular expression.'),),
            (
                Param('pattern', str, Text('Regex pattern to search for.'), keyword_only=False),
                _SEARCHED,
                Param(
                    'include_glob',
                    str | None,
                    Text(
                        "If provided, match this glob against root-relative paths (e.g. '*.py').",
                        workspace='If provided, only search files whose path from the root matches this glob, '
                        "where `*`\nalso spans `/`: '*.py' for every Python file, 'src/*.py' for those anywhere "
                        'under `src`.',
                    ),
                    default=None,
                ),
            ),
            Text('str: Matching lines formatted as file:line_number:text, with paths relative to `cwd`.'),
            read_only=True,
        ),
        ToolSpec(
            'find_files',
            (Text('Find files by glob pattern (name matching, not content search).'),),
            (
                Param(
                    'pattern',
                    str,
                    Text(
                        "Glob pattern to match, relative to `path` (e.g. '*.py',\n'**/*.json'). Absolute patterns are rejected."
                    ),
                    keyword_only=False,
                ),
                _SEARCHED,
            ),
            Text('Newline-separated list of matching file paths relative to `cwd`.'),
            read_only=True,
        ),
        ToolSpec(
            'create_directory',
            (Text('Create a directory and any missing parents.'),),
            (_DIRECTORY,),
            Text('Confirmation message.'),
        ),
        ToolSpec(
            'file_info',
            (Text('Get metadata about a file or directory.'),),
            (replace(_PATH, doc=Text('File or directory path relative to `cwd`.')),),
            Text(
                'Formatted metadata including size, type, and permissions.',
                workspace="The path, its type and size, whether a file is binary, a text file's line count and\n"
                "content hash, and a symlink's target, where the workspace provides them.",
            ),
            read_only=True,
        ),
        ToolSpec(
            'list_files',
            (
                Text(
                    'List files under a directory, recursively, sorted by path, respecting ignore files and skipping '
                    'hidden files.'
                ),
            ),
            (
                Param('path', str, Text('Directory to list, relative to `cwd`.'), default='.', keyword_only=False),
                _optional('glob', "If provided, only list files matching this glob (e.g. '*.py' or 'src/**')."),
            ),
            Text('One file path per line, relative to `cwd`.'),
            read_only=True,
            ripgrep=True,
        ),
        ToolSpec(
            'grep',
            (Text('Search file contents with ripgrep, respecting ignore files and skipping hidden files.'),),
            (
                Param(
                    'pattern',
                    str,
                    Text('Regular expression (ripgrep syntax), or exact text when `literal` is set.'),
                    keyword_only=False,
                ),
                Param('path', str, Text('Directory or file to search, relative to `cwd`.'), default='.'),
                _optional('glob', "If provided, only search files matching this glob (e.g. '*.py')."),
                _optional('file_type', "If provided, only search this ripgrep file type (e.g. 'py', 'rust')."),
                Param('ignore_case', bool, Text('Match case-insensitively.'), default=False),
                Param(
                    'literal',
                    bool,
                    Text('Treat `pattern` as exact text rather than a regular expression.'),
                    default=False,
                ),
                Param('context', int, Text('Lines of context to show around each match (0 to 20).'), default=0),
            ),
            Text('Matches as `file:line:text`; context lines as `file-line-text`. Paths are relative to `cwd`.'),
            read_only=True,
            ripgrep=True,
        ),
        ToolSpec(
            'apply_patch',
            (
                Text('Apply a patch that adds, deletes, updates or moves files: all of it, or nothing.'),
                Text(
                    '`input` is the whole patch, in this format (the notes in brackets are not part of it):\n'
                    '\n'
                    '*** Begin Patch\n'
                    '*** Add File: docs/new.md\n'
                    '+every line of the new file, each after a +\n'
                    '*** Delete File: src/old.py\n'
                    '*** Update File: src/app.py\n'
                    '*** Move to: src/main.py      [optional: the updated file gets this path]\n'
                    '@@ def handler(request):      [optional: a line to find first; more @@ lines narrow further]\n'
                    ' a line kept as it is (one space before it)\n'
                    '-a line removed\n'
                    '+a line added\n'
                    '*** End of File               [optional: this hunk ends at the end of the file]\n'
                    '*** End Patch\n'
                    '\n'
                    'Paths are relative to `cwd`, never absolute. An Update File holds hunks, each\n'
                    'starting with @@; its kept and removed lines are found in the file in order, each\n'
                    'hunk after the previous one. Copy about three lines above and below each change\n'
                    'exactly as the file has them, and add an @@ line naming the enclosing function or\n'
                    'class when those lines occur more than once. If any file fails (a path, a missing\n'
                    'file, a hunk that does not match), no file is changed and the error names the\n'
                    'file, the hunk and the line.',
                    workspace=None,
                ),
            ),
            (
                Param(
                    'input',
                    str,
                    Text('The whole patch, from `*** Begin Patch` to `*** End Patch`.'),
                    keyword_only=False,
                ),
            ),
            Text(
                'One line per file changed: `A path`, `M path`, `D path` or `R old -> new`,\nwith its new hash.',
                unhashed='One line per file changed: `A path`, `M path`, `D path` or `R old -> new`.',
            ),
            opt_in=True,
        ),
    )
}
"""Every tool, in registration order."""

FILE_SYSTEM_TOOL_NAMES: tuple[str, ...] = tuple(TOOLS)
"""Every tool `FileSystem` can register, in registration order."""

DEFAULT_TOOL_NAMES: tuple[str, ...] = tuple(
    name for name, spec in TOOLS.items() if not spec.ripgrep and not spec.opt_in
)
"""The tools `FileSystem` registers by default."""

RIPGREP_TOOL_NAMES: tuple[str, ...] = tuple(name for name, spec in TOOLS.items() if spec.ripgrep)
"""Opt-in tools with ripgrep semantics (ignore files, file types); ours run ripgrep's crates in-process."""

READ_ONLY_TOOL_NAMES: frozenset[str] = frozenset(name for name, spec in TOOLS.items() if spec.read_only)
"""The tools that do not modify the workspace; `read_only=True` keeps only these."""
