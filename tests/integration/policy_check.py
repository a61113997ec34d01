#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
# policy_check.py: structural checks of policy/stapled-gpu.rego against the SDK's facts, and its verdicts on real claims.
#
# Usage: policy_check.py POLICY SDK_FACTS VECTOR_DIR
# Prints "ok - ..." / "FAIL - ..." lines; exit 0 when all pass, 1 otherwise,
# 2 when an input cannot be read.
#
# No Rego engine is packaged in Debian 12, so this is not OPA or regorus.
# It reads the policy with a small parser that accepts only the few
# statement shapes the policy uses (a rule call, `x := ref`, `ref ==
# literal`, `object.get(ref, "k", null) == null`, `count(input) > N`, and
# `every v in input { ... }`) and refuses anything else, so a policy edited
# beyond them fails here instead of being half-understood. From that parse
# it derives (a) every claim key read, (b) the conditions each device type
# must meet, and (c) verdicts on claims, by evaluating exactly those shapes.
#
# What it does not check: full Rego syntax and semantics (operator
# precedence, `some`, `not`, `with`, partial sets, Rego v1 keywords), that
# nvattest's embedded engine accepts the file, or anything about the EAR
# input of nvattest's attest-v2. The lexical pass only guarantees balanced
# brackets, a package line first, known keywords and known characters.

import copy
import json
import os
import re
import sys

# The keywords the parser evaluates; any other Rego keyword is refused.
KNOWN_KEYWORDS = {"package", "import", "default", "every", "in"}
REGO_KEYWORDS = KNOWN_KEYWORDS | {"not", "some", "with", "as", "else", "if",
                                  "contains", "true", "false", "null"}

# What stapled-gpu.rego deliberately changes from the built-in verdict.
NONCE_CLAIM = "x-nvidia-cert-ocsp-nonce-matches"
ADDED = {
    "gpu x-nvidia-gpu-attestation-report-nonce-match == true",
    "gpu secboot == true",
    'gpu dbgstat == "disabled"',
    "nvswitch x-nvidia-switch-attestation-report-nonce-match == true",
    "nvswitch secboot == true",
    'nvswitch dbgstat == "disabled"',
}

FAILS = 0


def ok(msg):
    print("ok - " + msg)


def fail(msg):
    global FAILS
    FAILS += 1
    print("FAIL - " + msg)


def check(cond, msg):
    (ok if cond else fail)(msg)


# ---- lexical pass -------------------------------------------------------

TOKEN_RE = re.compile(r'''
    (?P<ws>[ \t]+) | (?P<nl>\n) | (?P<comment>\#[^\n]*)
  | (?P<string>"(?:[^"\\\n]|\\.)*")
  | (?P<number>[0-9]+)
  | (?P<ident>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<op>:=|==|[{}()\[\].,>])
''', re.VERBOSE)


class PolicyError(Exception):
    pass


def tokenize(text):
    """Tokens as (kind, value, line); raises PolicyError on a character
    outside the accepted set. Comments and blanks are dropped."""
    toks, pos, line = [], 0, 1
    while pos < len(text):
        m = TOKEN_RE.match(text, pos)
        if not m:
            raise PolicyError("line %d: unexpected %r" % (line, text[pos]))
        kind, val = m.lastgroup, m.group()
        if kind == "nl":
            toks.append(("nl", "\n", line))
            line += 1
        elif kind not in ("ws", "comment"):
            toks.append((kind, val, line))
        pos = m.end()
    toks.append(("nl", "\n", line))
    return toks


def lexical_check(toks):
    """Balanced brackets, `package` first, no keyword the parser does not
    evaluate. Returns a list of problems (empty when clean)."""
    problems, stack = [], []
    pairs = {")": "(", "]": "[", "}": "{"}
    for kind, val, line in toks:
        if kind == "op" and val in "([{":
            stack.append((val, line))
        elif kind == "op" and val in ")]}":
            if not stack or stack.pop()[0] != pairs[val]:
                problems.append("line %d: unbalanced %s" % (line, val))
        elif kind == "ident" and val in REGO_KEYWORDS - KNOWN_KEYWORDS - \
                {"true", "false", "null"}:
            problems.append("line %d: keyword %s not handled" % (line, val))
    problems += ["line %d: %s never closed" % (l, v) for v, l in stack]
    first = [t for t in toks if t[0] != "nl"][:2]
    if [t[1] for t in first] != ["package", "policy"]:
        problems.append("the first statement is not `package policy`")
    return problems


# ---- parser -------------------------------------------------------------

class Parser:
    """Recursive descent over the restricted statement shapes above."""

    def __init__(self, toks):
        self.toks, self.i = toks, 0

    def peek(self, off=0):
        return self.toks[min(self.i + off, len(self.toks) - 1)]

    def take(self, kind=None, val=None):
        tok = self.peek()
        if (kind and tok[0] != kind) or (val and tok[1] != val):
            raise PolicyError("line %d: expected %s, found %r" %
                              (tok[2], val or kind, tok[1]))
        self.i += 1
        return tok

    def skip_nl(self):
        while self.peek()[0] == "nl" and self.i < len(self.toks) - 1:
            self.i += 1

    def at_end(self):
        self.skip_nl()
        return self.i >= len(self.toks) - 1

    def ref(self):
        path = [self.take("ident")[1]]
        while self.peek()[1] in ("[", "."):
            if self.take()[1] == "[":
                path.append(json.loads(self.take("string")[1]))
                self.take("op", "]")
            else:
                path.append(self.take("ident")[1])
        return path

    def literal(self):
        kind, val, line = self.take()
        if kind == "string":
            return json.loads(val)
        if val in ("true", "false", "null"):
            return {"true": True, "false": False, "null": None}[val]
        raise PolicyError("line %d: %r is not a literal" % (line, val))

    def statement(self):
        if self.peek()[1] == "every":
            return self.every()
        if self.peek()[1] == "count":
            return self.count()
        if self.peek()[1] == "object":
            return self.object_get()
        if self.peek(1)[1] == "(":
            name = self.take("ident")[1]
            self.take("op", "(")
            arg = self.ref()
            self.take("op", ")")
            return ("call", name, arg)
        if self.peek(1)[1] == ":=":
            var = self.take("ident")[1]
            self.take("op", ":=")
            return ("bind", var, self.ref())
        left = self.ref()
        self.take("op", "==")
        return ("eq", left, self.literal())

    def every(self):
        self.take("ident", "every")
        var = self.take("ident")[1]
        self.take("ident", "in")
        self.take("ident", "input")
        return ("every", var, self.body())

    def count(self):
        self.take("ident", "count")
        self.take("op", "(")
        self.take("ident", "input")
        self.take("op", ")")
        self.take("op", ">")
        return ("count_gt", int(self.take("number")[1]))

    def object_get(self):
        for v in ("object", ".", "get", "("):
            self.take(val=v)
        obj = self.ref()
        self.take("op", ",")
        key = json.loads(self.take("string")[1])
        for v in (",", "null", ")", "==", "null"):
            self.take(val=v)
        return ("absent", obj + [key])

    def body(self):
        self.take("op", "{")
        stmts = []
        while True:
            self.skip_nl()
            if self.peek()[1] == "}":
                self.take()
                return stmts
            stmts.append(self.statement())
            if self.peek()[0] != "nl":
                raise PolicyError("line %d: one statement per line" %
                                  self.peek()[2])

    def policy(self):
        """Returns (rules, defaults): rules maps a name to a list of
        (param or None, body); several definitions mean "any of"."""
        self.skip_nl()
        self.take("ident", "package")
        self.take("ident", "policy")
        rules, defaults = {}, {}
        while not self.at_end():
            head = self.take("ident")[1]
            if head == "import":
                if self.ref() != ["future", "keywords", "every"]:
                    raise PolicyError("only future.keywords.every is handled")
            elif head == "default":
                name = self.take("ident")[1]
                self.take("op", ":=")
                defaults[name] = self.literal()
            else:
                param = None
                if self.peek()[1] == "(":
                    self.take()
                    param = self.take("ident")[1]
                    self.take("op", ")")
                rules.setdefault(head, []).append((param, self.body()))
        return rules, defaults


# ---- evaluation ---------------------------------------------------------

UNDEF = object()


def walk(env, path):
    val = env.get(path[0], UNDEF)
    for key in path[1:]:
        if not isinstance(val, dict) or key not in val:
            return UNDEF
        val = val[key]
    return val


def same(a, b):
    """JSON equality without Python's True == 1."""
    return type(a) is type(b) and a == b


def holds(rules, stmts, env):
    """True when every statement holds; an undefined reference fails."""
    for st in stmts:
        if st[0] == "count_gt":
            v = env["input"]
            good = isinstance(v, list) and len(v) > st[1]
        elif st[0] == "every":
            good = all(holds(rules, st[2], dict(env, **{st[1]: item}))
                       for item in env["input"])
        elif st[0] == "call":
            arg = walk(env, st[2])
            good = arg is not UNDEF and call(rules, st[1], arg, env)
        elif st[0] == "bind":
            val = walk(env, st[2])
            good = val is not UNDEF
            env = dict(env, **{st[1]: val})
        elif st[0] == "eq":
            val = walk(env, st[1])
            good = val is not UNDEF and same(val, st[2])
        else:  # absent
            parent = walk(env, st[1][:-1])
            good = parent is not UNDEF and (
                not isinstance(parent, dict) or parent.get(st[1][-1]) is None)
        if not good:
            return False
    return True


def call(rules, name, arg, env):
    if name not in rules:
        raise PolicyError("call of undefined rule %s" % name)
    return any(holds(rules, body, {"input": env["input"], param: arg})
               for param, body in rules[name])


def verdict(rules, defaults, claims):
    """data.policy.nv_match for this claims array."""
    if any(holds(rules, body, {"input": claims})
           for _, body in rules.get("nv_match", [])):
        return True
    return defaults.get("nv_match", UNDEF)


# ---- the conditions each device type must meet --------------------------

def alternatives(rules, stmts, env):
    """The body as a list of alternatives, each a frozenset of conditions:
    ("count", n), ("eq", path, literal), ("absent", path) or
    ("every", alternatives); a path starts at "*", one device of input."""
    alts = [frozenset()]
    for st in stmts:
        if st[0] == "count_gt":
            mine = [frozenset([("count", st[1])])]
        elif st[0] == "every":
            inner = alternatives(rules, st[2], dict(env, **{st[1]: ("*",)}))
            mine = [frozenset([("every", tuple(inner))])]
        elif st[0] == "call":
            arg = env[st[2][0]] + tuple(st[2][1:])
            mine = [a for param, body in rules[st[1]]
                    for a in alternatives(rules, body, dict(env, **{param: arg}))]
        elif st[0] == "bind":
            env = dict(env, **{st[1]: env[st[2][0]] + tuple(st[2][1:])})
            continue
        else:
            path = env[st[1][0]] + tuple(st[1][1:])
            mine = [frozenset([(st[0], path) + tuple(st[2:])])]
        alts = [a | m for a in alts for m in mine]
    return alts


TYPE_KEY = "x-nvidia-device-type"


def normal_form(rules):
    """The policy's conditions in sdk-claims.txt's normal form: a set of
    "SCOPE CONDITION" strings. Raises PolicyError on a shape that does not
    reduce to one guarded alternative per device type."""
    top = alternatives(rules, rules["nv_match"][0][1], {"input": ("input",)})
    if len(rules["nv_match"]) != 1 or len(top) != 1:
        raise PolicyError("nv_match must have one definition, one alternative")
    out, types = set(), []
    for cond in top[0]:
        if cond[0] == "count":
            out.add("all count(input) > %d" % cond[1])
        elif cond[0] == "every":
            for alt in cond[1]:
                types.append(scope_conditions(alt, out))
        else:
            raise PolicyError("condition outside every: %r" % (cond,))
    if len(set(types)) != len(types):
        raise PolicyError("two alternatives for one device type")
    out.add("all %s in %s" % (TYPE_KEY, ",".join(sorted(types))))
    return out


def scope_conditions(alt, out):
    """Adds one device type's conditions to out; returns the type."""
    guards = [c for c in alt if c[0] == "eq" and c[1] == ("*", TYPE_KEY)]
    if len(guards) != 1:
        raise PolicyError("an alternative without one device-type guard")
    scope = guards[0][2]
    for c in alt - {guards[0]}:
        if c[0] not in ("eq", "absent") or c[1][0] != "*":
            raise PolicyError("unexpected condition %r" % (c,))
        key = ".".join(c[1][1:])
        out.add("%s %s %s" % (scope, key, "== " + json.dumps(c[2])
                              if c[0] == "eq" else "null-or-absent"))
    return scope


def keys_read(conds):
    """(scope, key) pairs for every claim key the conditions read."""
    pairs = set()
    for c in conds:
        scope, path = c.split(" ")[0], c.split(" ")[1].split(".")
        if scope == "all":
            pairs |= {("gpu", TYPE_KEY), ("nvswitch", TYPE_KEY)}
            continue
        pairs.add((scope, path[0]))
        pairs |= {("chain", k) for k in path[1:]}
    return pairs


# ---- the normal form, evaluated (for the built-in verdict) --------------

def normal_verdict(conds, claims):
    """Evaluates "SCOPE CONDITION" strings on a claims array."""
    if not isinstance(claims, list) or not claims:
        return False
    by_scope = {}
    for c in conds:
        scope, rest = c.split(" ", 1)
        by_scope.setdefault(scope, []).append(rest)
    types = next(c for c in by_scope["all"] if " in " in c).split(" in ")[1]
    for dev in claims:
        t = dev.get(TYPE_KEY)
        if t not in types.split(","):
            return False
        for rest in by_scope.get(t, []):
            if not normal_holds(rest, dev):
                return False
    return True


def normal_holds(rest, dev):
    path, _, cond = rest.partition(" ")
    val = {"d": dev}
    val = walk(val, ["d"] + path.split("."))
    if cond == "null-or-absent":
        return val is UNDEF or val is None
    return val is not UNDEF and same(val, json.loads(cond[3:]))


# ---- inputs -------------------------------------------------------------

def read_facts(path):
    """sdk-claims.txt as (claims, checks): a set of (scope, key) and a set
    of "SCOPE CONDITION" strings."""
    claims, checks = set(), set()
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("claim "):
                _, scope, key = line.split(" ")
                claims.add((scope, key))
            elif line.startswith("check "):
                checks.add(line[len("check "):])
            elif line and not line.startswith("#"):
                raise PolicyError("%s: unknown line %r" % (path, line))
    return claims, checks


def nras_as_nvattest(path, dev_type):
    """NRAS claims keyed by device, shaped as nvattest hands them to a
    policy: claims.h's from_json reads a missing ocsp-nonce-matches or
    ocsp-response-valid as true, and to_json adds the device type."""
    with open(path, encoding="utf-8") as f:
        by_dev = json.load(f)
    out = []
    for dev in by_dev.values():
        dev = dict(dev, **{TYPE_KEY: dev_type})
        for key, val in dev.items():
            if key.endswith("-cert-chain") and isinstance(val, dict):
                val.setdefault(NONCE_CLAIM, True)
                val.setdefault("x-nvidia-cert-ocsp-response-valid", True)
        out.append(dev)
    return out


def with_nonce(claims, value):
    """A copy with every chain's ocsp-nonce-matches set to value."""
    out = copy.deepcopy(claims)
    for dev in out:
        for key, val in dev.items():
            if key.endswith("-cert-chain") and isinstance(val, dict):
                val[NONCE_CLAIM] = value
    return out


def violate(claims, idx, cond):
    """A copy whose device idx breaks cond ("PATH == LIT" or
    "PATH null-or-absent")."""
    out = copy.deepcopy(claims)
    path, _, rest = cond.partition(" ")
    keys = path.split(".")
    obj = out[idx]
    for k in keys[:-1]:
        obj = obj[k]
    if rest == "null-or-absent":
        obj[keys[-1]] = [{"id": 37, "name": "FSP_UCODE_MIN_SVN"}]
    else:
        lit = json.loads(rest[3:])
        obj[keys[-1]] = (not lit) if isinstance(lit, bool) else lit + "-not"
    return out


# ---- the checks ---------------------------------------------------------

def check_structure(conds, facts_claims, facts_checks):
    unknown = sorted("%s %s" % p for p in keys_read(conds) - facts_claims)
    check(not unknown, "every claim key the policy reads is one the SDK "
          "defines" + (": unknown " + ", ".join(unknown) if unknown else ""))
    removed = facts_checks - conds
    nonce_only = all(c.endswith("." + NONCE_CLAIM + " == true") for c in removed)
    check(removed and nonce_only, "the policy keeps every built-in check but "
          "the OCSP nonce (dropped: %d, all %s)" % (len(removed), NONCE_CLAIM))
    chains = {c.split(" ")[0] + " " + c.split(" ")[1].split(".")[0]
              for c in facts_checks if "-cert-chain." in c}
    check(len(removed) == len(chains), "the nonce check is dropped on all "
          "%d chains, none kept" % len(chains))
    added = conds - facts_checks
    check(added == ADDED, "the policy adds exactly the evidence nonce, "
          "secboot and dbgstat rules" + ("" if added == ADDED else
          ": extra %s, missing %s" % (sorted(added - ADDED),
                                      sorted(ADDED - added))))


def check_mutations(rules, defaults, builtin, claims, name):
    """Breaks each condition of each device in turn, on the claims as they
    are and on the cache-hit copy: the policy refuses whatever the built-in
    verdict refuses, except a nonce mismatch, and refuses the added rules'
    failures too; with every answer from a cache it refuses any other
    failure."""
    wrong = []
    hit = with_nonce(claims, False)
    for idx, dev in enumerate(claims):
        scope = dev[TYPE_KEY]
        for cond in sorted(c.split(" ", 1)[1] for c in builtin | ADDED
                           if c.startswith(scope + " ")):
            bad = violate(claims, idx, cond)
            nonce, added = NONCE_CLAIM in cond, scope + " " + cond in ADDED
            want = (nonce, added)  # (policy, built-in)
            got = (verdict(rules, defaults, bad), normal_verdict(builtin, bad))
            if got != want:
                wrong.append("%s[%d] %s" % (name, idx, cond))
            if verdict(rules, defaults, violate(hit, idx, cond)) is not nonce:
                wrong.append("%s[%d] %s, cache hit" % (name, idx, cond))
    check(not wrong, "%s: each condition broken in turn gives the expected "
          "verdicts (%s)" % (name, ", ".join(wrong) or "all as expected"))


def check_vectors(rules, defaults, builtin, vecdir):
    with open(os.path.join(vecdir, "gpu_attestation_h100.json")) as f:
        direct = json.load(f)["claims"]
    gpu = nras_as_nvattest(os.path.join(vecdir, "hopperClaimsv3_decoded.json"), "gpu")
    sw = nras_as_nvattest(os.path.join(vecdir, "switch_decoded.json"), "nvswitch")
    cases = [("nvattest 1.2.2 output, direct", direct),
             ("NRAS GPU claims", gpu), ("NRAS NVSwitch claims", sw),
             ("NRAS GPU and NVSwitch together", gpu + sw)]
    for name, claims in cases:
        check(verdict(rules, defaults, claims) is True and
              normal_verdict(builtin, claims), name + ": accepted, as by "
              "the built-in verdict")
        hit = with_nonce(claims, False)
        check(verdict(rules, defaults, hit) is True and
              not normal_verdict(builtin, hit), name + ", every OCSP answer "
              "from a cache (nonce-matches false): accepted, the built-in "
              "verdict refuses")
    check(verdict(rules, defaults, []) is False, "no device: refused")
    odd = copy.deepcopy(direct)
    odd[0][TYPE_KEY] = "cpu"
    check(verdict(rules, defaults, odd) is False, "an unknown device type: "
          "refused")
    gone = copy.deepcopy(direct)
    del gone[0]["x-nvidia-gpu-vbios-rim-cert-chain"]
    check(verdict(rules, defaults, gone) is False, "a missing chain: refused")
    check_mutations(rules, defaults, builtin, direct, "direct")
    check_mutations(rules, defaults, builtin, gpu + sw, "NRAS")


def main(argv):
    if len(argv) != 4:
        print("usage: policy_check.py POLICY SDK_FACTS VECTOR_DIR")
        return 2
    try:
        with open(argv[1], encoding="utf-8") as f:
            toks = tokenize(f.read())
        facts_claims, facts_checks = read_facts(argv[2])
    except (OSError, PolicyError) as e:
        print("FAIL - cannot read the inputs: %s" % e)
        return 2
    problems = lexical_check(toks)
    check(not problems, "lexically Rego: balanced brackets, package line, "
          "only handled keywords" + ("; " + "; ".join(problems) if problems else ""))
    try:
        rules, defaults = Parser(toks).policy()
        conds = normal_form(rules)
    except (PolicyError, KeyError) as e:
        fail("the policy reduces to the checked shapes: %s" % e)
        return 1
    check(defaults.get("nv_match") is False, "nv_match defaults to false")
    check_structure(conds, facts_claims, facts_checks)
    check_vectors(rules, defaults, facts_checks, argv[3])
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
