#!/usr/bin/python3
"""PyTorch oracle for gdp's nn library: a small GDP-style model (GraphSAGE -> superposition ->
Transformer-XL segments with memory -> categorical head) written with PyTorch's own ops and
autograd, with fixed weights. Writes inputs, weights, outputs, all gradients and the losses of a
few Adam steps to a versioned JSON file that tests/nn/test_oracle.cpp checks our C++ against.

Usage: /usr/bin/python3 scripts/torch_oracle.py --out FILE.json   (exit 77: no torch)
       /usr/bin/python3 scripts/torch_oracle.py --lstm --out FILE.json
Format (version 2): {"format": "gdp-torch-oracle", "version": 2, "torch_version": "...",
  "cases": [case, ...]}, one case per model configuration (full mask; causal mask), each
  {"config": {...}, "graph": {"num_nodes", "src", "dst"}, "actions": [...], "advantages": [...],
  "inputs": {name: T}, "params": {name: T}, "outputs": {name: T}, "grads": {name: T},
  "adam": {"lr", "betas", "eps", "losses": [loss before step 1, ..., after the last step]}}
with T = {"shape": [...], "data": [row-major floats]}. Everything is computed in float64.
--lstm instead writes the LSTM cell case (nn/lstm.h, checked by tests/nn/test_lstm.cpp):
torch.nn.LSTMCell unrolled over a few steps, {"format": "gdp-torch-oracle-lstm", "version": 1,
  "torch_version", "config": {"input", "hidden", "batch", "steps", "seed"},
  "inputs": {"x0".."x{T-1}", "h0", "c0"}, "params": {"lstm.w_ih", "lstm.w_hh", "lstm.b_ih",
  "lstm.b_hh"}, "proj": {"h", "c"}, "outputs": {"h" (T, B, H), "c" (B, H), "loss",
  "h1_zero_state", "c1_zero_state"}, "grads": {parameter and input names}}
with loss = sum(h * proj.h) + sum(c_T * proj.c) and the zero-state step LSTMCell(x0) (hx None).
"""
import argparse
import json
import math
import sys

try:
    import torch
    import torch.nn.functional as F
except ImportError as e:  # the C++ test skips on this exit code
    print(f"torch_oracle: cannot import torch ({e})", file=sys.stderr)
    sys.exit(77)

FORMAT, VERSION = "gdp-torch-oracle", 2

CONFIG = {
    "num_nodes": 23, "num_edges": 41, "in_dim": 5, "width": 8, "sage_layers": 2,
    "heads": 2, "txl_layers": 2, "ffn": 12, "segment": 5, "memory": 7, "causal": False,
    "sup_hidden": 6, "actions": 4, "entropy_coef": 0.01, "ln_eps": 1e-5,
    "adam_lr": 1e-2, "adam_steps": 3, "seed": 20191,
}


def make_problem(cfg, gen):
    n, e = cfg["num_nodes"], cfg["num_edges"]
    src, dst = [], []
    while len(src) < e:
        a, b = torch.randint(0, n, (2,), generator=gen).tolist()
        if a != b:
            src.append(a)
            dst.append(b)
    x = torch.rand(n, cfg["in_dim"], generator=gen, dtype=torch.float64) * 2 - 1
    actions = torch.randint(0, cfg["actions"], (n,), generator=gen)
    adv = torch.rand(n, generator=gen, dtype=torch.float64) * 2 - 1
    return src, dst, x, actions, adv


def make_params(cfg, gen):
    """Names and shapes mirror the C++ modules (SageEncoder "sage", Superposition "sup",
    TransformerXL "txl", head "head"); values uniform in +-1/sqrt(fan_in) as nn.Linear."""
    D, Fdim, L = cfg["width"], cfg["ffn"], cfg["txl_layers"]
    shapes = []
    for l in range(cfg["sage_layers"]):
        fan = 3 * (cfg["in_dim"] if l == 0 else D)
        shapes += [(f"sage{l}.w", (D, fan), fan), (f"sage{l}.b", (D,), fan)]
    for l in range(L):
        p = f"txl{l}."
        shapes += [(p + w, (D, D), D) for w in ("wq", "wk", "wv", "wr", "wo")]
        shapes += [(p + "u", (D,), D), (p + "vb", (D,), D), (p + "ln1_w", (D,), None),
                   (p + "ln1_b", (D,), None), (p + "w1", (Fdim, D), D), (p + "b1", (Fdim,), D),
                   (p + "w2", (D, Fdim), Fdim), (p + "b2", (D,), Fdim), (p + "ln2_w", (D,), None),
                   (p + "ln2_b", (D,), None)]
    Hs = cfg["sup_hidden"]
    shapes += [("sup.w1", (Hs, D), D), ("sup.b1", (Hs,), D), ("sup.w2", (2 * L * D, Hs), Hs),
               ("sup.b2", (2 * L * D,), Hs)]
    shapes += [("head.w", (cfg["actions"], D), D), ("head.b", (cfg["actions"],), D)]
    params = {}
    for name, shape, fan in shapes:
        if fan is None:  # layer norm: weight around 1, bias around 0, perturbed so both matter
            base = 1.0 if name.endswith("_w") else 0.0
            t = base + 0.2 * (torch.rand(shape, generator=gen, dtype=torch.float64) * 2 - 1)
        else:
            bound = 1.0 / math.sqrt(fan)
            t = (torch.rand(shape, generator=gen, dtype=torch.float64) * 2 - 1) * bound
        params[name] = t.requires_grad_(True)
    return params


def segment_mean(h, rows, cols, n):
    """out[r] = mean of h[cols[e]] over edges e with rows[e] == r; zeros for empty rows."""
    agg = torch.zeros(n, h.shape[1], dtype=h.dtype).index_add(0, rows, h[cols])
    deg = torch.bincount(rows, minlength=n).clamp(min=1).to(h.dtype)
    return agg / deg[:, None]


def sage(cfg, P, x, src, dst):
    n, h = cfg["num_nodes"], x
    for l in range(cfg["sage_layers"]):
        m_in = segment_mean(h, dst, src, n)   # row v: sources of edges into v
        m_out = segment_mean(h, src, dst, n)  # row v: destinations of edges out of v
        h = torch.relu(torch.cat([h, m_in, m_out], 1) @ P[f"sage{l}.w"].T + P[f"sage{l}.b"])
    return h


def superposition(cfg, P, h):
    g = h.mean(0, keepdim=True)
    z = torch.relu(g @ P["sup.w1"].T + P["sup.b1"])
    return (z @ P["sup.w2"].T + P["sup.b2"]).reshape(2 * cfg["txl_layers"], cfg["width"])


def rel_sinusoid(r, D):
    f = torch.pow(10000.0, -2.0 * torch.arange(D // 2, dtype=torch.float64) / D)
    ang = r.to(torch.float64)[:, None] * f[None, :]
    return torch.cat([torch.sin(ang), torch.cos(ang)], 1)


def txl_layer(cfg, P, l, x, mem, rk_all, film, r_min):
    D, H = cfg["width"], cfg["heads"]
    Dh, p = D // H, f"txl{l}."
    S, M = x.shape[0], (0 if mem is None else mem.shape[0])
    K = M + S
    ctx = x if mem is None else torch.cat([mem, x], 0)
    q = (x @ P[p + "wq"].T).reshape(S, H, Dh)
    k = (ctx @ P[p + "wk"].T).reshape(K, H, Dh)
    v = (ctx @ P[p + "wv"].T).reshape(K, H, Dh)
    lo_r = 0 if cfg["causal"] else 1 - S
    rk = rk_all[lo_r - r_min: M + S - r_min].reshape(-1, H, Dh)  # rows r = lo_r .. M+S-1
    ac = torch.einsum("ihd,jhd->hij", q + P[p + "u"].reshape(H, Dh), k)
    bd_full = torch.einsum("ihd,phd->hip", q + P[p + "vb"].reshape(H, Dh), rk)
    i = torch.arange(S)[:, None]
    j = torch.arange(K)[None, :]
    idx = (M + i - j) - lo_r  # row of rk for distance r = M + i - j
    allowed = idx >= 0
    bd = torch.gather(bd_full, 2, idx.clamp(min=0).expand(H, S, K))
    scores = (ac + bd) / math.sqrt(Dh)
    if cfg["causal"]:
        scores = scores.masked_fill(~allowed[None], float("-inf"))
    probs = torch.softmax(scores, -1)
    a = torch.einsum("hij,jhd->ihd", probs, v).reshape(S, D)
    o = a @ P[p + "wo"].T
    if film is not None:
        o = o * (1 + film[2 * l]) + film[2 * l + 1]
    h = F.layer_norm(x + o, (D,), P[p + "ln1_w"], P[p + "ln1_b"], cfg["ln_eps"])
    f = torch.relu(h @ P[p + "w1"].T + P[p + "b1"]) @ P[p + "w2"].T + P[p + "b2"]
    return F.layer_norm(h + f, (D,), P[p + "ln2_w"], P[p + "ln2_b"], cfg["ln_eps"])


def transformer_xl(cfg, P, h, film):
    S, Mlen, L = cfg["segment"], cfg["memory"], cfg["txl_layers"]
    r_min = 0 if cfg["causal"] else 1 - S
    R = rel_sinusoid(torch.arange(r_min, Mlen + S), cfg["width"])
    rk_all = [R @ P[f"txl{l}.wr"].T for l in range(L)]
    mems, outs = [None] * L, []
    for start in range(0, h.shape[0], S):
        x = h[start:start + S]
        for l in range(L):
            allx = x.detach() if mems[l] is None else torch.cat([mems[l], x.detach()], 0)
            nxt = allx[-Mlen:] if Mlen > 0 else None
            x = txl_layer(cfg, P, l, x, mems[l], rk_all[l], film, r_min)
            mems[l] = nxt
        outs.append(x)
    return torch.cat(outs, 0)


def model(cfg, P, x, src, dst, actions, adv):
    h = sage(cfg, P, x, src, dst)
    film = superposition(cfg, P, h)
    y = transformer_xl(cfg, P, h, film)
    logits = y @ P["head.w"].T + P["head.b"]
    logp_all = torch.log_softmax(logits, -1)
    logp = logp_all.gather(1, actions[:, None])[:, 0]
    ent = -(logp_all.exp() * logp_all).sum(-1)
    loss = -(logp * adv).mean() - cfg["entropy_coef"] * ent.mean()
    return loss, {"sage": h, "film": film, "txl": y, "logits": logits, "log_prob": logp,
                  "entropy": ent}


def tensor_json(t):
    t = t.detach().to(torch.float64).contiguous()
    return {"shape": list(t.shape), "data": t.reshape(-1).tolist()}


def run_case(cfg):
    """One model configuration: forward, backward, Adam steps; returns its JSON section."""
    gen = torch.Generator().manual_seed(cfg["seed"])
    src_l, dst_l, x, actions, adv = make_problem(cfg, gen)
    src, dst = torch.tensor(src_l), torch.tensor(dst_l)
    P = make_params(cfg, gen)
    init = {k: v.detach().clone() for k, v in P.items()}
    x.requires_grad_(True)

    loss, outs = model(cfg, P, x, src, dst, actions, adv)
    loss.backward()
    grads = {k: v.grad.detach().clone() for k, v in P.items()}
    grads["x"] = x.grad.detach().clone()

    # Adam from the same initial weights (x is data here).
    x_data = x.detach()
    opt = torch.optim.Adam(P.values(), lr=cfg["adam_lr"])
    losses = []
    for _ in range(cfg["adam_steps"]):
        opt.zero_grad()
        l, _ = model(cfg, P, x_data, src, dst, actions, adv)
        losses.append(l.item())
        l.backward()
        opt.step()
    with torch.no_grad():
        losses.append(model(cfg, P, x_data, src, dst, actions, adv)[0].item())
    print(f"torch_oracle: causal={cfg['causal']} loss {loss.item():.6f}, "
          f"adam losses {', '.join(f'{v:.6f}' for v in losses)}")
    return {
        "config": cfg,
        "graph": {"num_nodes": cfg["num_nodes"], "src": src_l, "dst": dst_l},
        "actions": actions.tolist(), "advantages": adv.tolist(),
        "inputs": {"x": tensor_json(x)},
        "params": {k: tensor_json(v) for k, v in init.items()},
        "outputs": dict({k: tensor_json(v) for k, v in outs.items()},
                        loss=tensor_json(loss.reshape(()))),
        "grads": {k: tensor_json(v) for k, v in grads.items()},
        "adam": {"lr": cfg["adam_lr"], "betas": [0.9, 0.999], "eps": 1e-8, "losses": losses},
    }


LSTM_CONFIG = {"input": 5, "hidden": 6, "batch": 3, "steps": 3, "seed": 20192}


def run_lstm(cfg):
    """torch.nn.LSTMCell (gates i, f, g, o) unrolled from (h0, c0); the C++ LstmCell registers
    the same four tensors as "<prefix>.w_ih", ".w_hh", ".b_ih", ".b_hh"."""
    gen = torch.Generator().manual_seed(cfg["seed"])
    I, H, B, T = cfg["input"], cfg["hidden"], cfg["batch"], cfg["steps"]

    def uniform(*shape, bound=1.0):
        return (torch.rand(*shape, generator=gen, dtype=torch.float64) * 2 - 1) * bound

    cell = torch.nn.LSTMCell(I, H, dtype=torch.float64)
    names = {"lstm.w_ih": "weight_ih", "lstm.w_hh": "weight_hh", "lstm.b_ih": "bias_ih",
             "lstm.b_hh": "bias_hh"}
    with torch.no_grad():
        for torch_name in names.values():
            p = getattr(cell, torch_name)
            p.copy_(uniform(*p.shape, bound=1.0 / math.sqrt(H)))
    xs = [uniform(B, I).requires_grad_(True) for _ in range(T)]
    h0, c0 = uniform(B, H).requires_grad_(True), uniform(B, H).requires_grad_(True)
    proj_h, proj_c = uniform(T, B, H), uniform(B, H)

    h, c, hs = h0, c0, []
    for x in xs:
        h, c = cell(x, (h, c))
        hs.append(h)
    hs = torch.stack(hs, 0)
    loss = (hs * proj_h).sum() + (c * proj_c).sum()
    loss.backward()
    with torch.no_grad():
        h1z, c1z = cell(xs[0])
    inputs = dict({f"x{t}": x for t, x in enumerate(xs)}, h0=h0, c0=c0)
    grads = {k: getattr(cell, v).grad for k, v in names.items()}
    grads.update({k: v.grad for k, v in inputs.items()})
    print(f"torch_oracle: lstm loss {loss.item():.6f}")
    return {
        "format": FORMAT + "-lstm", "version": 1, "torch_version": torch.__version__,
        "config": cfg,
        "inputs": {k: tensor_json(v) for k, v in inputs.items()},
        "params": {k: tensor_json(getattr(cell, v)) for k, v in names.items()},
        "proj": {"h": tensor_json(proj_h), "c": tensor_json(proj_c)},
        "outputs": {"h": tensor_json(hs), "c": tensor_json(c), "loss": tensor_json(loss),
                    "h1_zero_state": tensor_json(h1z), "c1_zero_state": tensor_json(c1z)},
        "grads": {k: tensor_json(v) for k, v in grads.items()},
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--lstm", action="store_true", help="write the LSTM cell case instead")
    args = ap.parse_args()
    torch.set_num_threads(1)
    if args.lstm:
        with open(args.out, "w") as f:
            json.dump(run_lstm(LSTM_CONFIG), f)
        print(f"torch_oracle: wrote {args.out}")
        return
    # Full mask with memory longer than a segment; causal mask with memory shorter than one.
    cases = [CONFIG, dict(CONFIG, causal=True, memory=3, segment=6, seed=CONFIG["seed"] + 1)]
    doc = {"format": FORMAT, "version": VERSION, "torch_version": torch.__version__,
           "cases": [run_case(cfg) for cfg in cases]}
    with open(args.out, "w") as f:
        json.dump(doc, f)
    print(f"torch_oracle: wrote {args.out}")


if __name__ == "__main__":
    main()
