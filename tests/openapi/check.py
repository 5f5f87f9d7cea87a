#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The OpenAPI description (www/openapi.json) against the server.

    check.py routes DESCRIPTION TABLE
        The description and the route table agree: TABLE is what
        tests/openapi/routes prints (each route and problem type of the
        responder); every route is described with its method, its
        credentials and its key, nothing else is, and every problem type
        has its schema.

    check.py answers DESCRIPTION ANSWERS.jsonl ...
        Every answer a suite recorded (tests/lib/answers.py) conforms to
        the description: its path matches a described path and method (or
        gets the 404 or 405 the description says such requests get), its
        status is described, its Content-Type is the one described, its
        body validates against the schema ($refs resolved, JSON Schema
        draft 2020-12) and the headers described as required are present
        and valid.  The answers left out are listed below (EXCLUDED), each
        with its reason, and counted on the closing line.

Output as the other suites': "ok - ..." / "FAIL - ..." lines and a closing
"openapi: N passed, M failed"; exit 0 iff M == 0.  Needs python3-jsonschema.
"""

import base64
import collections
import json
import os
import re
import sys

try:
    import jsonschema
except ImportError:
    jsonschema = None

# The paths the web servers of etc/ hand to the responder (idem-site.conf
# and its like: "^/(payments|healthz|metrics)(/|$)"); any other path is
# one of the web server's files.
API_PATH = re.compile(r"^/(payments|healthz|metrics)(/|$)")
# The methods the responder reads (req_method_ok, src/http/request.c): any
# other is a 400 bad-request, whatever the path.
METHOD_FORM = re.compile(r"^[A-Z]{1,16}$")
METHODS = ("get", "put", "post", "delete", "options", "head", "patch",
           "trace")

# The answers not checked, each with its reason.  A rule is (reason, test);
# test takes the recorded answer and says whether the rule covers it.
EXCLUDED = [
    ("the provider service's GET /stats (idem-provider, on its own port), "
     "which the live suite reads to count charges: another program, not "
     "this API", lambda a: a["where"].startswith("http:") and
     a["path"] == "/stats"),
    ("the web server's own files (www/, demo/), not the API: through a "
     "web server, every path outside /payments, /healthz and /metrics is "
     "one of its files (the live suite checks that /openapi.json is served); as "
     "CGI every answer is the responder's and is checked",
     lambda a: a["where"].startswith("http:") and
     not API_PATH.match(a["path"])),
]

# Answers checked whole but for a header the description requires, each
# with its reason: (reason, test, header names waived).
WAIVED = [
    ("the web server's own 401 in front of the responder (the Basic-auth "
     "sites of etc/: Apache's ErrorDocument, nginx's error_page; realm "
     "\"idem payments\"): a problem+json answer the responder never saw, "
     "so it has no Request-Id",
     lambda a: a["status"] == 401 and
     any(n.lower() == "www-authenticate" and
         v.startswith('Basic realm="idem payments"')
         for n, v in a["headers"]),
     ("request-id",)),
]


# ---------------------------------------------------------------- helpers

class Results:
    def __init__(self):
        self.passed = 0
        self.failed = 0

    def ok(self, what):
        self.passed += 1
        print("ok - " + what, flush=True)

    def fail(self, what, detail=()):
        self.failed += 1
        print("FAIL - " + what, flush=True)
        for line in detail:
            print("#   " + line, flush=True)

    def summary(self, suite="openapi"):
        print("%s: %d passed, %d failed" % (suite, self.passed, self.failed))
        return 0 if self.failed == 0 else 1


def load(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def deref(doc, obj):
    """obj with its $ref (a local one, "#/...") followed."""
    seen = 0
    while isinstance(obj, dict) and "$ref" in obj:
        ref = obj["$ref"]
        if not ref.startswith("#/"):
            raise ValueError("not a local $ref: %s" % ref)
        obj = doc
        for part in ref[2:].split("/"):
            obj = obj[part.replace("~1", "/").replace("~0", "~")]
        seen += 1
        if seen > 32:
            raise ValueError("a $ref loop at %s" % ref)
    return obj


def operations(doc):
    """(path, method, operation, path item) for every described one."""
    for path, item in doc.get("paths", {}).items():
        item = deref(doc, item)
        for m in METHODS:
            if m in item:
                yield path, m, item[m], item


def op_parameters(doc, item, op):
    out = {}
    for p in item.get("parameters", []) + op.get("parameters", []):
        p = deref(doc, p)
        out[(p["in"], p["name"].lower())] = p
    return out


# ---------------------------------------------------------------- routes

# Problem types the web server answers with itself, in front of the
# responder, so the route table does not list them: slug and status.
# etc/nginx's sites answer service-unavailable when no worker answers.
WEB_SERVER_PROBLEMS = {"service-unavailable": 503}


def check_routes(doc, table, R):
    """The route table's routes and problem types against doc."""
    routes, problems = {}, dict(WEB_SERVER_PROBLEMS)
    for line in table.splitlines():
        f = line.split()
        if not f:
            continue
        if f[0] == "route" and len(f) == 5:
            routes[(f[1].lower(), f[2])] = (f[3], f[4] == "keyed")
        elif f[0] == "problem" and len(f) == 3:
            problems[f[1]] = int(f[2])
        else:
            R.fail("the route table's line %r is understood" % line)
    described = {}
    for path, m, op, item in operations(doc):
        described[(m, path)] = (op, item)
    for key in sorted(set(routes) | set(described)):
        name = "%s %s" % (key[0].upper(), key[1])
        if key not in described:
            R.fail("%s of the route table is described" % name)
            continue
        if key not in routes:
            R.fail("%s is described but the route table has no such route"
                   % name)
            continue
        who, keyed = routes[key]
        op, item = described[key]
        why = []
        security = op.get("security", doc.get("security", []))
        if (who == "anyone") != (security == []):
            why.append("the table says %s may call it, the description's "
                       "security is %r" % (who, security))
        if who != "anyone":
            for st in ("401", "403"):
                if st not in op["responses"]:
                    why.append("no %s answer for a route that takes "
                               "credentials" % st)
        key_param = op_parameters(doc, item, op).get(("header",
                                                      "idempotency-key"))
        has_key = key_param is not None and key_param.get("required") is True
        if keyed != has_key or keyed != bool(op.get("x-idem-keyed")):
            why.append("the table says %s, the description %s" % (
                "keyed" if keyed else "not keyed",
                "requires an Idempotency-Key" if has_key else
                "requires none"))
        for st, resp in op["responses"].items():
            resp = deref(doc, resp)
            hs = {h.lower() for h in resp.get("headers", {})}
            for h in ("request-id", "cache-control"):
                if h not in hs:
                    why.append("its %s answer describes no %s header"
                               % (st, h))
        if why:
            R.fail("%s is described as the route table has it" % name, why)
        else:
            R.ok("%s is described as the route table has it (%s%s)" % (
                name, who, ", keyed" if keyed else ""))
    schemas = doc.get("components", {}).get("schemas", {})
    have = {n[len("Problem-"):] for n in schemas if n.startswith("Problem-")}
    for slug in sorted(set(problems) | have):
        name = "problem type %s" % slug
        if slug not in problems:
            R.fail("%s is described but the server has no such type" % name)
            continue
        if slug not in have:
            R.fail("%s (%d) is described" % (name, problems[slug]))
            continue
        sch = schemas["Problem-" + slug]
        parts = {}
        for p in sch.get("allOf", []):
            parts.update(p.get("properties", {}))
        status = parts.get("status", {}).get("const")
        url = sch.get("externalDocs", {}).get("url")
        if status != problems[slug] or url != "/problems/%s.html" % slug:
            R.fail("%s is described with its status and page" % name,
                   ["status %r (the server's: %d), page %r" %
                    (status, problems[slug], url)])
        else:
            R.ok("%s is described (%d, %s)" % (name, status, url))


# ---------------------------------------------------------------- answers

def header(answer, name):
    vals = [v for n, v in answer["headers"] if n.lower() == name.lower()]
    return vals


def match_path(doc, path):
    """The described template path matches, or None.  A {parameter} is one
    segment, possibly empty, as the route table's matcher has it."""
    for tpl in doc.get("paths", {}):
        rx = "^" + re.sub(r"\\\{[^/]*?\\\}", "[^/]*", re.escape(tpl)) + "$"
        if re.match(rx, path):
            return tpl
    return None


class Checker:
    def __init__(self, doc):
        self.doc = doc
        self.validators = {}

    def validator(self, schema):
        key = json.dumps(schema, sort_keys=True)
        if key not in self.validators:
            # The description's components beside the schema, so that its
            # "#/components/..." references resolve against them.
            root = {"$schema": "https://json-schema.org/draft/2020-12/schema",
                    "components": self.doc.get("components", {}),
                    "allOf": [schema]}
            cls = jsonschema.Draft202012Validator
            cls.check_schema(root)
            self.validators[key] = cls(root,
                                       format_checker=cls.FORMAT_CHECKER)
        return self.validators[key]

    def expected(self, a):
        """(what, response object, allow) for the answer: the described
        response it must be, or a failure string."""
        doc = self.doc
        comps = doc.get("components", {}).get("responses", {})
        method = a["method"]
        if not METHOD_FORM.match(method):
            return "a method not of 1 to 16 capital letters", \
                comps.get("MalformedRequest"), None, "400"
        tpl = match_path(doc, a["path"])
        if tpl is None:
            return "a path that is no endpoint", comps.get("NotFound"), \
                None, "404"
        item = deref(doc, doc["paths"][tpl])
        m = method.lower()
        if m == "head" and "head" not in item:
            m = "get"
        if m not in item or m not in METHODS:
            allow = []
            if "get" in item:
                allow += ["GET", "HEAD"]
            if "post" in item:
                allow.append("POST")
            return "%s %s, not described" % (method, tpl), \
                comps.get("MethodNotAllowed"), ", ".join(allow), "405"
        op = item[m]
        st = str(a["status"])
        if st not in op["responses"]:
            return "%s %s" % (method, tpl), None, None, None
        return "%s %s" % (method, tpl), deref(doc, op["responses"][st]), \
            None, st

    def check(self, a, waived=()):
        """A list of what is wrong with the answer a; the headers named in
        waived are not required."""
        what, resp, allow, want = self.expected(a)
        st = str(a["status"])
        if resp is None:
            return ["%s: status %s is not described" % (what, st)]
        if want is not None and want != st:
            return ["%s: status %s, the description says %s" % (
                what, st, want)]
        why = []
        for name, h in resp.get("headers", {}).items():
            h = deref(self.doc, h)
            vals = header(a, name)
            if not vals:
                if h.get("required") and name.lower() not in waived:
                    why.append("no %s header" % name)
                continue
            if len(vals) > 1:
                why.append("%s header %d times" % (name, len(vals)))
                continue
            v = vals[0]
            sch = h.get("schema", {})
            if deref(self.doc, sch).get("type") == "integer":
                if not re.match(r"^[0-9]+$", v):
                    why.append("%s: %r is not an integer" % (name, v))
                    continue
                v = int(v)
            err = self.first_error(sch, v)
            if err:
                why.append("%s header %r: %s" % (name, vals[0], err))
        if allow is not None and header(a, "Allow") != [allow]:
            why.append("Allow %r, the description's methods are %r" % (
                header(a, "Allow"), allow))
        body = base64.b64decode(a["body"])
        content = resp.get("content")
        ctype = header(a, "Content-Type")
        if a["method"] == "HEAD" or not content:
            if body:
                why.append("a body (%d bytes) where none is described"
                           % len(body))
            if not content:
                return why
        mt = ctype[0].split(";")[0].strip().lower() if ctype else None
        if mt not in content:
            why.append("Content-Type %r, the description says %s" % (
                ctype, " or ".join(sorted(content))))
            return why
        if a["method"] == "HEAD":
            return why
        sch = content[mt].get("schema", {})
        if mt.endswith("json"):
            try:
                value = json.loads(body.decode("utf-8"))
            except ValueError as e:
                return why + ["the body is not JSON: %s: %r" % (e,
                                                               body[:200])]
        else:
            try:
                value = body.decode("utf-8")
            except UnicodeDecodeError:
                return why + ["the body is not UTF-8"]
        err = self.first_error(sch, value)
        if err:
            why.append("the body does not validate: %s; body %r" % (
                err, body[:300]))
        return why

    def first_error(self, schema, value):
        errs = sorted(self.validator(schema).iter_errors(value),
                      key=lambda e: (len(e.path), str(e.path)))
        if not errs:
            return None
        best = jsonschema.exceptions.best_match(errs)
        loc = "/".join(str(p) for p in best.absolute_path)
        return "at /%s: %s" % (loc, best.message[:300])


def check_answers(doc, files, R):
    chk = Checker(doc)
    answers = []
    for name in files:
        with open(name, encoding="utf-8") as f:
            answers += [json.loads(l) for l in f if l.strip()]
    if not answers:
        R.fail("answers were recorded (%s)" % ", ".join(files))
        return
    excluded = collections.Counter()
    waived = collections.Counter()
    checked = collections.Counter()
    bad = collections.defaultdict(list)
    seen = collections.defaultdict(set)
    for a in answers:
        rule = next((r for r, t in EXCLUDED if t(a)), None)
        if rule is not None:
            excluded[rule] += 1
            seen[rule].add("%s %s %s" % (a["method"], a["path"], a["status"]))
            continue
        what, _, _, _ = chk.expected(a)
        key = "%s -> %s" % (what, a["status"])
        checked[key] += 1
        waive = [w for w in WAIVED if w[1](a)]
        for reason, _, names in waive:
            waived[reason] += 1
            seen[reason].add("%s %s %s" % (a["method"], a["path"],
                                           a["status"]))
        why = chk.check(a, {n for w in waive for n in w[2]})
        if why:
            bad[key].append((a, why))
    for key in sorted(checked):
        if key in bad:
            a, why = bad[key][0]
            R.fail("%s: %d of %d answers conform" % (
                key, checked[key] - len(bad[key]), checked[key]),
                ["%s %s (%s):" % (a["method"], a["target"], a["where"])] +
                ["  " + w for w in why] +
                (["and %d more like it" % (len(bad[key]) - 1)]
                 if len(bad[key]) > 1 else []))
        else:
            R.ok("%s: %d answers conform" % (key, checked[key]))
    for rule, n in sorted(excluded.items()):
        print("# EXCLUDED %d answers: %s" % (n, rule))
        for one in sorted(seen[rule])[:20]:
            print("#   " + one)
    for rule, n in sorted(waived.items()):
        print("# WAIVED %d answers: %s" % (n, rule))
        for one in sorted(seen[rule])[:20]:
            print("#   " + one)
    print("# %d answers checked, %d excluded" % (
        sum(checked.values()), sum(excluded.values())))


def main(argv):
    if len(argv) < 3 or argv[0] not in ("routes", "answers"):
        sys.exit(__doc__.split("\n\n")[1])
    if jsonschema is None and argv[0] == "answers":
        print("openapi: python3-jsonschema is not installed")
        return 77
    R = Results()
    try:
        doc = load(argv[1])
    except (OSError, ValueError) as e:
        R.fail("%s is JSON: %s" % (argv[1], e))
        return R.summary()
    if argv[0] == "routes":
        with open(argv[2], encoding="utf-8") as f:
            check_routes(doc, f.read(), R)
    else:
        check_answers(doc, argv[2:], R)
    return R.summary()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
