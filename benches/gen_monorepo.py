"""Generate a deterministic synthetic monorepo for `bench_ripgrep.py`.

The tree holds `--files` files (default 200,000) in a git repository (`.git/`) with a
root `.gitignore`, nested `.gitignore` and `.ignore` files, ignored `node_modules/`,
`build/` and `*.log` files, hidden directories and a few binary files. Text files are
pseudo-source lines; `RARE_TOKEN` appears in a handful of files, `import <name>` lines are
common. Same arguments, same bytes.

    python benches/gen_monorepo.py DIR [--files N] [--seed S]
"""

from __future__ import annotations

import argparse
import os
import random
from pathlib import Path

RARE_TOKEN = 'XYZZY_RARE_TOKEN'
"""A literal present in exactly `RARE_FILES` files of the tree."""

RARE_FILES = 7

WORDS = (
    'alpha beta gamma delta epsilon zeta theta kappa lambda sigma omega value index count '
    'buffer result config handler request response client server parse render update fetch '
    'state cache token stream worker queue event signal option record schema model table'
).split()

NOISE = (
    (0.15, 'node_modules/dep_{dep}/lib/m{i}.js'),
    (0.2, 'build/out/o{i}.txt'),
    (0.22, 'logs/run{i}.log'),
    (0.24, 'generated/g{i}.py'),
    (0.25, '.cache/c{i}.txt'),
    (0.252, 'assets/img{i}.bin'),
)
"""`(r below, path)`: the share of files (by a uniform `r`) that are ignored, hidden, generated or binary."""
EXTENSIONS = ('py', 'rs', 'ts', 'js', 'go', 'md', 'txt', 'json', 'toml', 'c')


def _line(rng: random.Random) -> str:
    kind = rng.random()
    a, b, c = rng.choice(WORDS), rng.choice(WORDS), rng.choice(WORDS)
    if kind < 0.08:
        return f'import {a}_{b}'
    if kind < 0.2:
        return f'def {a}_{b}({c}):'
    if kind < 0.3:
        return f'    return {a}.{b}({c}, {rng.randint(0, 9999)})'
    if kind < 0.35:
        return ''
    return f'    {a} = {b}_{c}[{rng.randint(0, 99)}] + {rng.choice(WORDS)}'


def _text(rng: random.Random) -> str:
    return '\n'.join(_line(rng) for _ in range(rng.randint(8, 40))) + '\n'


def generate(root: Path, files: int, seed: int) -> None:
    rng = random.Random(seed)
    root.mkdir(parents=True, exist_ok=True)
    (root / '.git' / 'info').mkdir(parents=True, exist_ok=True)
    (root / '.git' / 'HEAD').write_text('ref: refs/heads/main\n')
    (root / '.git' / 'info' / 'exclude').write_text('*.swp\n')
    (root / '.gitignore').write_text('node_modules/\nbuild/\n*.log\n!important.log\n*.pyc\n')
    (root / '.ignore').write_text('vendor/\n')
    rare = set(rng.sample(range(files), RARE_FILES))
    written = 0
    pkg = 0
    while written < files:
        base = root / f'pkg_{pkg:04d}'
        pkg += 1
        if pkg % 7 == 0:
            (base).mkdir(parents=True, exist_ok=True)
            (base / '.gitignore').write_text('generated/\n*.tmp\n')
        if pkg % 11 == 0:
            (base).mkdir(parents=True, exist_ok=True)
            (base / '.ignore').write_text('fixtures/\n')
        per_pkg = min(files - written, rng.randint(600, 1400))
        for i in range(per_pkg):
            r = rng.random()
            noise = next((name for below, name in NOISE if r < below), None)
            if noise is not None:
                rel = noise.format(i=i, dep=i % 37)
            else:
                depth = rng.randint(0, 3)
                dirs = '/'.join(f'{rng.choice(WORDS)}' for _ in range(depth))
                rel = f'src/{dirs}/{rng.choice(WORDS)}_{i}.{rng.choice(EXTENSIONS)}'.replace('//', '/')
            path = base / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            if rel.endswith('.bin'):
                data = bytes(rng.getrandbits(8) for _ in range(512)) + b'\0' * 16
                path.write_bytes(data)
            else:
                text = _text(rng)
                if written in rare:
                    text += f'    marker = "{RARE_TOKEN}"\n'
                path.write_text(text)
            written += 1
    (root / '.gen-complete').write_text(f'{files} {seed}\n')


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument('dir', type=Path)
    parser.add_argument('--files', type=int, default=200_000)
    parser.add_argument('--seed', type=int, default=20261130)
    args = parser.parse_args()
    generate(args.dir, args.files, args.seed)
    print(f'generated {args.files} files under {os.fspath(args.dir)}')


if __name__ == '__main__':
    main()
