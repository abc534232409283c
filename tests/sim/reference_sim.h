// A slow, readable reference of the simulator's rules (docs/cost-model.md), written
// independently of sim/simulator.cpp: links are a busy flag + FIFO + two events
// (serialization done, arrival), memory is a map of tensor copies, the event list is scanned
// linearly. The fast simulator is checked against it on small random graphs.
#pragma once

#include <algorithm>
#include <deque>
#include <limits>
#include <map>
#include <set>
#include <vector>

#include "core/cluster.h"
#include "core/graph.h"
#include "core/placement.h"
#include "sim/simulator.h"

namespace gdp::test {

struct RefResult {
  double step_time_s = 0;
  std::vector<int64_t> peak_bytes, end_bytes, link_bytes;
  std::vector<double> start_s, end_s;
  int transfers = 0;
};

inline RefResult reference_simulate(const Graph& g, const Cluster& c, const Simulator& sim,
                                    const Placement& p, QueuePolicy policy) {
  const int n = g.num_ops(), D = c.num_devices(), L = c.num_directed_links();
  RefResult r;
  r.start_s.assign(n, -1);
  r.end_s.assign(n, -1);
  r.link_bytes.assign(L, 0);
  std::vector<int> topo_pos(n);
  for (int k = 0; k < n; ++k) topo_pos[g.topo_order()[k]] = k;

  // Tensors are (op, output); edges name them.
  using TensorKey = std::pair<int, int>;
  struct Copy {
    int64_t bytes = 0;
    int remaining = 0;  // consumers on this device + transfers still to arrive (source copy)
  };
  std::map<std::pair<TensorKey, int>, Copy> copies;  // (tensor, device) -> copy
  std::vector<int64_t> mem(D, 0);
  for (int i = 0; i < n; ++i) mem[p.device[i]] += g.op(i).resident_bytes();
  r.peak_bytes = mem;
  auto alloc = [&](int d, int64_t b) {
    mem[d] += b;
    r.peak_bytes[d] = std::max(r.peak_bytes[d], mem[d]);
  };
  auto release = [&](const TensorKey& t, int d) {
    auto it = copies.find({t, d});
    if (--it->second.remaining == 0) {
      mem[d] -= it->second.bytes;
      copies.erase(it);
    }
  };

  struct Transfer {
    TensorKey tensor;
    int dst = 0;
    std::vector<int32_t> route;
    size_t hop = 0;
    int64_t bytes = 0;
    double tail_s = 0;  // when the tail reaches the start of the current hop
  };
  std::vector<Transfer> xfers;
  std::vector<bool> link_busy(L, false);
  std::vector<std::deque<int>> link_queue(L);

  enum Kind { kOpEnd, kSerDone, kArrive };
  struct Event {
    double t;
    int order;  // same-time order: serialization-done first, then devices, then link arrivals
    long seq;
    Kind kind;
    int id;
  };
  std::vector<Event> events;
  long seq = 0;
  std::vector<int> running(D, -1), pending(n);
  struct Ready {
    double t;
    int op;
  };
  std::vector<std::vector<Ready>> ready(D);
  double now = 0;

  // Cut-through routing: the head crosses a hop in its latency and goes on to the next hop;
  // a hop is busy until the whole tensor has streamed through it, which cannot happen
  // before the tail has arrived from the previous hop.
  auto start_transfer_on_link = [&](int x, int l) {
    link_busy[l] = true;
    Transfer& X = xfers[x];
    double ser = static_cast<double>(X.bytes) / c.links[l / 2].bandwidth_Bps;
    double done = std::max(now + ser, X.tail_s);
    double lat = c.links[l / 2].latency_s;
    r.link_bytes[l] += X.bytes;
    X.tail_s = done + lat;
    bool last = X.hop + 1 == X.route.size();
    events.push_back({done, -1, seq++, kSerDone, l});
    events.push_back({last ? done + lat : now + lat, D + l, seq++, kArrive, x});
  };
  auto enqueue = [&](int x) {
    int l = xfers[x].route[xfers[x].hop];
    if (link_busy[l])
      link_queue[l].push_back(x);
    else
      start_transfer_on_link(x, l);
  };
  auto make_ready = [&](int op) { ready[p.device[op]].push_back({now, op}); };

  for (int i = 0; i < n; ++i) {
    pending[i] = static_cast<int>(g.in_ptr()[i + 1] - g.in_ptr()[i]);
    if (pending[i] == 0) make_ready(i);
  }
  auto dispatch = [&]() {
    for (int d = 0; d < D; ++d) {
      if (running[d] >= 0 || ready[d].empty()) continue;
      auto best =
          std::min_element(ready[d].begin(), ready[d].end(), [&](const Ready& a, const Ready& b) {
            if (policy == QueuePolicy::fifo && a.t != b.t) return a.t < b.t;
            return topo_pos[a.op] < topo_pos[b.op];
          });
      int op = best->op;
      ready[d].erase(best);
      running[d] = op;
      const Op& o = g.op(op);
      alloc(d, o.output_bytes() + o.temp_bytes);
      r.start_s[op] = now;
      r.end_s[op] = now + sim.op_time_s(op, d);
      events.push_back({r.end_s[op], d, seq++, kOpEnd, d});
    }
  };

  dispatch();
  while (!events.empty()) {
    auto it = std::min_element(events.begin(), events.end(), [](const Event& a, const Event& b) {
      if (a.t != b.t) return a.t < b.t;
      if (a.order != b.order) return a.order < b.order;
      return a.seq < b.seq;
    });
    Event ev = *it;
    events.erase(it);
    now = ev.t;
    if (ev.kind == kOpEnd) {
      int d = ev.id, op = running[d];
      running[d] = -1;
      const Op& o = g.op(op);
      mem[d] -= o.temp_bytes;
      for (int64_t k = g.in_ptr()[op]; k < g.in_ptr()[op + 1]; ++k) {
        const Edge& e = g.edges()[g.in_edge_ids()[k]];
        release({e.src, e.src_output}, d);
      }
      // Consumers of each output, grouped by device, in edge order.
      for (int out = 0; out < static_cast<int>(o.outputs.size()); ++out) {
        TensorKey t{op, out};
        std::vector<int> remote_order;
        int local = 0;
        for (int64_t k = g.out_ptr()[op]; k < g.out_ptr()[op + 1]; ++k) {
          const Edge& e = g.edges()[g.out_edge_ids()[k]];
          if (e.src_output != out) continue;
          int dd = p.device[e.dst];
          if (dd == d) {
            ++local;
            if (--pending[e.dst] == 0) make_ready(e.dst);
          } else if (std::find(remote_order.begin(), remote_order.end(), dd) ==
                     remote_order.end()) {
            remote_order.push_back(dd);
          }
        }
        int remaining = local + static_cast<int>(remote_order.size());
        if (remaining == 0) {
          mem[d] -= o.outputs[out].bytes;
        } else {
          copies[{t, d}] = Copy{o.outputs[out].bytes, remaining};
        }
        for (int dd : remote_order) {
          Transfer x;
          x.tensor = t;
          x.dst = dd;
          x.route = c.route(d, dd);
          for (int64_t k = g.out_ptr()[op]; k < g.out_ptr()[op + 1]; ++k) {
            const Edge& e = g.edges()[g.out_edge_ids()[k]];
            if (e.src_output == out) x.bytes = std::max(x.bytes, e.bytes);
          }
          xfers.push_back(x);
          ++r.transfers;
          enqueue(static_cast<int>(xfers.size()) - 1);
        }
      }
    } else if (ev.kind == kSerDone) {
      int l = ev.id;
      link_busy[l] = false;
      if (!link_queue[l].empty()) {
        int x = link_queue[l].front();
        link_queue[l].pop_front();
        start_transfer_on_link(x, l);
      }
    } else {
      Transfer& x = xfers[ev.id];
      if (++x.hop < x.route.size()) {
        enqueue(ev.id);
      } else {
        int consumers = 0;
        for (int64_t k = g.out_ptr()[x.tensor.first]; k < g.out_ptr()[x.tensor.first + 1]; ++k) {
          const Edge& e = g.edges()[g.out_edge_ids()[k]];
          if (e.src_output != x.tensor.second || p.device[e.dst] != x.dst) continue;
          ++consumers;
          if (--pending[e.dst] == 0) make_ready(e.dst);
        }
        alloc(x.dst, x.bytes);
        copies[{x.tensor, x.dst}] = Copy{x.bytes, consumers};
        release(x.tensor, p.device[x.tensor.first]);
      }
    }
    bool more_now =
        std::any_of(events.begin(), events.end(), [&](const Event& e) { return e.t == now; });
    if (!more_now) dispatch();
  }
  r.step_time_s = *std::max_element(r.end_s.begin(), r.end_s.end());
  r.end_bytes = mem;
  return r;
}

}  // namespace gdp::test
