"""Renders the Helm chart deploy/helm/ngx-mcp as "helm template" would,
for t/deploy.t, where helm is not installable (Debian has no package):
the part of Go's text/template and of Helm's functions that the chart
uses, nothing more (an action it does not know is an error, so the chart
cannot grow past what this checks without the test saying so).  Prints
one JSON object: each template's text and its YAML documents, parsed.

    python3 helm_render.py CHART_DIR [VALUES_JSON]

VALUES_JSON is merged over values.yaml (maps key by key).
"""

import base64
import hashlib
import json
import os
import re
import sys

import yaml

TOKEN = re.compile(r'\{\{(-?)\s*(.*?)\s*(-?)\}\}', re.S)


def lex(text):
    """Text and actions, with {{- and -}} trimming applied."""
    out, pos = [], 0
    for m in TOKEN.finditer(text):
        out.append(['text', text[pos:m.start()]])
        if m.group(1):
            out[-1][1] = out[-1][1].rstrip(' \t\r\n')
        out.append(['action', m.group(2), bool(m.group(3))])
        pos = m.end()
    out.append(['text', text[pos:]])
    for i, t in enumerate(out):
        if t[0] == 'action' and t[2] and i + 1 < len(out):
            out[i + 1][1] = out[i + 1][1].lstrip(' \t\r\n')
    return [t for t in out if not (t[0] == 'action'
                                   and t[1].startswith('/*'))]


def parse(tokens, i=0, stop=('end',)):
    """A list of nodes up to one of stop; returns (nodes, index, word)."""
    nodes = []
    while i < len(tokens):
        t = tokens[i]
        i += 1
        if t[0] == 'text':
            nodes.append(('text', t[1]))
            continue
        word = t[1].split(None, 1)[0]
        rest = t[1][len(word):].strip()
        if word in stop:
            return nodes, i, word
        if word in ('if', 'range', 'with'):
            body, i, w = parse(tokens, i, ('end', 'else'))
            other = []
            if w == 'else':
                other, i, _ = parse(tokens, i, ('end',))
            nodes.append((word, rest, body, other))
        elif word == 'define':
            body, i, _ = parse(tokens, i, ('end',))
            nodes.append(('define', json.loads(rest), body))
        elif word in ('end', 'else'):
            raise SyntaxError('unexpected ' + word)
        else:
            nodes.append(('expr', t[1]))
    return nodes, i, None


def words(s):
    """An expression's words: strings, (groups), pipes, names."""
    out, i = [], 0
    while i < len(s):
        c = s[i]
        if c.isspace():
            i += 1
        elif c == '"':
            j = i + 1
            while s[j] != '"':
                j += 2 if s[j] == '\\' else 1
            out.append(('lit', json.loads(s[i:j + 1])))
            i = j + 1
        elif c == '(':
            depth, j = 1, i + 1
            while depth:
                depth += {'(': 1, ')': -1}.get(s[j], 0)
                j += 1
            out.append(('group', s[i + 1:j - 1]))
            i = j
        elif c == '|':
            out.append(('pipe', None))
            i += 1
        else:
            j = i
            while j < len(s) and not s[j].isspace() and s[j] not in '()|':
                j += 1
            w = s[i:j]
            out.append(('num', int(w)) if w.isdigit() else ('name', w))
            i = j
    return out


def empty(v):
    return v is None or v is False or v == 0 or v == '' or v == [] \
        or v == {}


class Chart:
    def __init__(self, root, values):
        self.root = root
        meta = yaml.safe_load(open(os.path.join(root, 'Chart.yaml')))
        self.top = {
            'Values': values,
            'Chart': {'Name': meta['name'], 'Version': meta['version'],
                      'AppVersion': meta.get('appVersion', '')},
            'Release': {'Name': 'test', 'Namespace': 'default',
                        'Service': 'Helm'},
            'Template': {'BasePath': 'ngx-mcp/templates'},
        }
        self.defines = {}
        self.files = {}
        tdir = os.path.join(root, 'templates')
        for name in sorted(os.listdir(tdir)):
            nodes, _, _ = parse(lex(open(os.path.join(tdir, name)).read()))
            self.files[name] = nodes
            for n in nodes:
                if n[0] == 'define':
                    self.defines[n[1]] = n[2]

    def field(self, path, dot):
        v = self.top if path.startswith('$') else dot
        for part in path.lstrip('$').split('.')[1:]:
            if part:
                v = v.get(part) if isinstance(v, dict) else None
        return v

    def arg(self, w, dot):
        kind, v = w
        if kind in ('lit', 'num'):
            return v
        if kind == 'group':
            return self.expr(v, dot)
        if v == '.' or v.startswith('.') or v.startswith('$'):
            return self.field(v, dot)
        raise SyntaxError('unknown word ' + v)

    def call(self, name, args):
        f = {
            'include': lambda n, d: self.run(self.defines[n], d),
            'print': lambda *a: ''.join(str(x) for x in a),
            'printf': lambda f, *a: f.replace('%s', '{}').format(*a),
            'default': lambda d, v=None: d if empty(v) else v,
            'quote': lambda v: json.dumps('' if v is None else str(v)),
            'nindent': lambda n, s: '\n' + '\n'.join(
                (' ' * n + l) if l else l for l in s.split('\n')),
            'toYaml': lambda v: yaml.safe_dump(
                v, default_flow_style=False).rstrip('\n'),
            'b64enc': lambda s: base64.b64encode(s.encode()).decode(),
            'sha256sum': lambda s: hashlib.sha256(s.encode()).hexdigest(),
            'join': lambda sep, l: sep.join(str(x) for x in l),
            'trunc': lambda n, s: s[:n],
            'trimSuffix': lambda x, s: s[:-len(x)] if s.endswith(x) else s,
            'contains': lambda x, s: x in s,
            'and': lambda *a: next((x for x in a if empty(x)), a[-1]),
            'or': lambda *a: next((x for x in a if not empty(x)), a[-1]),
            'not': lambda v: empty(v),
        }.get(name)
        if f is None:
            raise SyntaxError('unknown function ' + name)
        return f(*args)

    def expr(self, s, dot):
        ws, val, first = words(s), None, True
        cmds = [[]]
        for w in ws:
            if w[0] == 'pipe':
                cmds.append([])
            else:
                cmds[-1].append(w)
        for cmd in cmds:
            args = [] if first else [val]
            head = cmd[0]
            if head[0] == 'name' and not head[1].startswith(('.', '$')):
                val = self.call(head[1],
                                [self.arg(w, dot) for w in cmd[1:]] + args)
            elif len(cmd) == 1 and first:
                val = self.arg(head, dot)
            else:
                raise SyntaxError('cannot run ' + s)
            first = False
        return val

    def run(self, nodes, dot):
        out = []
        for n in nodes:
            if n[0] == 'text':
                out.append(n[1])
            elif n[0] == 'expr':
                v = self.expr(n[1], dot)
                out.append('' if v is None else str(v).lower()
                           if isinstance(v, bool) else str(v))
            elif n[0] == 'if':
                v = self.expr(n[1], dot)
                out.append(self.run(n[3] if empty(v) else n[2], dot))
            elif n[0] == 'with':
                v = self.expr(n[1], dot)
                out.append(self.run(n[3], dot) if empty(v)
                           else self.run(n[2], v))
            elif n[0] == 'range':
                v = self.expr(n[1], dot)
                out.append(self.run(n[3], dot) if empty(v)
                           else ''.join(self.run(n[2], x) for x in v))
        return ''.join(out)

    def render(self):
        res = {}
        for name, nodes in self.files.items():
            if name.startswith('_') or not name.endswith('.yaml'):
                continue
            text = self.run(nodes, self.top)
            docs = [d for d in yaml.safe_load_all(text) if d is not None]
            res[name] = {'text': text, 'docs': docs}
        return res


def merge(base, over):
    for k, v in over.items():
        if isinstance(v, dict) and isinstance(base.get(k), dict):
            merge(base[k], v)
        else:
            base[k] = v
    return base


def main():
    root = sys.argv[1]
    values = yaml.safe_load(open(os.path.join(root, 'values.yaml')))
    if len(sys.argv) > 2:
        merge(values, json.loads(sys.argv[2]))
    chart = Chart(root, values)
    chart.top['Template']['BasePath'] = 'ngx-mcp/templates'
    # the configmap's checksum: include of "ngx-mcp/templates/x.yaml"
    for name, nodes in chart.files.items():
        chart.defines['ngx-mcp/templates/' + name] = nodes
    json.dump(chart.render(), sys.stdout, default=str)


main()
