// Horcrux Hunt in the browser: the replay.

import { api, brainSays, levelOf } from "./api.js";
import { PACE_MS, cap, describeAction, h, message, messageBox, place, resultOf, seatName, show, state, svg, who } from "./dom.js";
import { entropyBits, evidence, unsure } from "./game.js";
import { go, route } from "./routes.js";
import { aiBelief } from "./seat.js";

// ------------------------------------------------------------------ the replay
export async function replayScreen(gameId) {
  const screen = (state.current = { kind: "replay", id: gameId, timer: null, step: 0 });
  show(h("section", { "data-testid": "replay" }, messageBox(), h("p", { class: "muted" }, "Loading the replay…")));
  let data;
  try {
    data = (await api("GET", `/games/${encodeURIComponent(gameId)}/replay`)).data;
  } catch (err) {
    if (state.current !== screen) return;
    // an error page with a way on, never a permanent "Loading"
    const running = err.code === "not_over";
    const why = running
      ? "This game is still being played: its replay opens once it is over."
      : err.status === 404
        ? "There is no such game: it may have expired, or the link is wrong."
        : "The replay could not be read.";
    show(
      h(
        "section",
        { "data-testid": "replay-error" },
        messageBox(),
        h(
          "div",
          { class: "panel" },
          h("h2", {}, "No replay"),
          h("p", {}, why),
          h(
            "div",
            { class: "row" },
            h("button", { class: "primary", "data-testid": "back-to-lobby", onclick: () => go("#/") }, "Back to the lobby"),
            running ? h("button", { "data-testid": "watch-instead", onclick: () => go(`#/game/${encodeURIComponent(gameId)}`) }, "Watch it") : null,
            !running && err.status !== 404 ? h("button", { onclick: () => route() }, "Try again") : null,
          ),
        ),
      ),
    );
    message(`No replay (${err.code}): ${err.message}`);
    return;
  }
  if (state.current !== screen) return;
  screen.data = data;
  screen.step = data.replay.steps.length - 1;
  screen.beliefs = {};
  renderReplay(screen);
  loadReplayBeliefs(screen);
}
// The replay's belief map at a step is the API's: `GET /games/{id}/belief?turn=N`, the
// default AI Harry's map on Harry's records before turn N (N: one past his last move by
// that step; 1 at the start), so the replay never contradicts the game's own map. The
// current step's is fetched first, then every other one (for the entropy line), each once.
export const beliefTurn = (steps, i) => {
  const hist = historyUpTo(steps, i);
  return hist.length ? hist[hist.length - 1].turn + 1 : 1;
};
export async function loadReplayBeliefs(screen) {
  const steps = screen.data.replay.steps;
  const wanted = [...new Set([beliefTurn(steps, screen.step), ...steps.map((_, i) => beliefTurn(steps, i))])];
  const fetchOne = async (n) => {
    if (screen.beliefs[n]) return;
    try {
      screen.beliefs[n] = (await api("GET", `/games/${encodeURIComponent(screen.id)}/belief?turn=${n}`)).data;
    } catch (err) {
      screen.beliefs[n] = { error: `${err.code}: ${err.message}` };
    }
    if (state.current === screen && beliefTurn(steps, screen.step) === n) renderReplay(screen);
  };
  for (const n of wanted) {
    if (state.current !== screen) return;
    await fetchOne(n);
  }
  screen.beliefsLoaded = true;
  if (state.current === screen) renderReplay(screen);
}
// the replay's Play: one step every PACE_MS to the end (from the start if at the end)
export function replayPlay(screen, on) {
  clearTimeout(screen.timer);
  screen.playing = on;
  const last = screen.data.replay.steps.length - 1;
  if (on && screen.step >= last) screen.step = 0;
  const tick = () => {
    if (state.current !== screen || !screen.playing) return;
    screen.step = Math.min(last, screen.step + 1);
    if (screen.step >= last) screen.playing = false;
    renderReplay(screen);
    if (screen.playing) screen.timer = setTimeout(tick, PACE_MS);
  };
  renderReplay(screen);
  if (on) screen.timer = setTimeout(tick, PACE_MS);
}
export function replayKey(screen, ev) {
  if (!screen.data) return;
  const n = screen.data.replay.steps.length;
  const d = { ArrowRight: 1, ArrowLeft: -1, Home: -n, End: n }[ev.key];
  if (!d) return;
  ev.preventDefault();
  screen.step = Math.max(0, Math.min(n - 1, screen.step + d));
  renderReplay(screen);
}
export function historyUpTo(steps, i) {
  return steps.slice(1, i + 1).filter((s) => s.actor === "harry").map((s) => ({ turn: s.turn, action: s.action, observations: s.observations }));
}
export function renderReplay(screen) {
  const { replay, belief_history: beliefs } = screen.data;
  const steps = replay.steps;
  const i = screen.step;
  const s = steps[i];
  const rules = replay.rules;
  const hist = historyUpTo(steps, i);
  const own = evidence(rules, hist, rules.horcruxes - s.destroyed);
  const n = beliefTurn(steps, i);
  const map = screen.beliefs && screen.beliefs[n];
  const fromApi = Boolean(map && map.occupancy);
  const ev = fromApi ? { p: map.occupancy } : own;
  const total = rules.locations.reduce((a, l) => a + ev.p[l], 0);
  const aiBelief = beliefs.filter((b) => b.turn <= s.turn).pop();
  const truthH = new Set(s.horcruxes);
  const truthD = new Set(s.decoys);
  const acted = new Set(s.observations.map((o) => o.location).concat(s.action && s.action.location ? [s.action.location] : []));
  const tile = (loc, heat) =>
    h(
      "div",
      { class: `tile ${truthH.has(loc) ? "horcrux" : ""} ${truthD.has(loc) ? "decoy" : ""} ${acted.has(loc) ? "last" : ""}`, heat: heat ? ev.p[loc].toFixed(3) : 0, "data-testid": `replay-${heat ? "belief" : "truth"}-${loc}` },
      h("span", { class: "name" }, place(loc)),
      !heat && (truthH.has(loc) || truthD.has(loc)) ? h("span", { class: "marks" }, truthH.has(loc) ? h("span", { class: "h" }, "HORCRUX") : null, truthD.has(loc) ? h("span", { class: "d" }, "DECOY") : null) : null,
      heat ? h("span", { class: "p" }, `${Math.round(ev.p[loc] * 100)}%`) : null,
    );
  const slider = h("input", { type: "range", min: 0, max: steps.length - 1, value: i, "data-testid": "replay-slider", "aria-label": "replay step" });
  slider.addEventListener("input", () => {
    screen.step = Number(slider.value);
    renderReplay(screen);
    document.querySelector("[data-testid=replay-slider]").focus();
  });
  const vmoves = steps.filter((x) => x.actor === "voldemort" && x.action && x.action.type !== "pass");
  const passes = steps.filter((x) => x.actor === "voldemort" && x.action && x.action.type === "pass").length;
  const what = s.actor === "setup" ? "The Horcruxes are hidden." : `${seatName(s.actor)} ${describeAction(s.action)}${s.observations.length ? `: ${resultOf(s.action, s.observations)}` : ""}.`;
  show(
    h(
      "section",
      { "data-testid": "replay", class: "replay" },
      messageBox(),
      h("div", { class: "row" }, h("button", { onclick: () => go("#/") }, "Lobby"), h("span", { class: "muted" }, "replay of ", h("code", {}, screen.id), ` · seed ${replay.seed}`)),
      h("div", { class: "panel end" }, h("h2", {}, `${seatName(replay.winner)} won`), h("p", {}, `${cap(replay.end_reason || "")}. Every move below is revealed.`)),
      h(
        "div",
        { class: "panel" },
        h("div", { class: "status" }, h("b", { "data-testid": "replay-step" }, `Step ${i} / ${steps.length - 1} · ${s.actor === "setup" ? "the start" : `turn ${Math.min(Math.max(1, s.turn), rules.max_turns)} of ${rules.max_turns}`}`), h("span", {}, what)),
        slider,
        h("div", { class: "row" }, h("button", { "data-testid": "replay-play", "data-playing": String(Boolean(screen.playing)), onclick: () => replayPlay(screen, !screen.playing) }, screen.playing ? "Pause" : "Play"), h("span", { class: "muted" }, "← → step, Home / End; Play: one step a second.")),
      ),
      h(
        "div",
        { class: "grid2" },
        h("div", { class: "panel" }, h("h3", {}, "The truth"), h("div", { class: "board" }, rules.locations.map((l) => tile(l, false)))),
        h(
          "div",
          { class: "panel" },
          h("h3", {}, "Harry's belief (his own evidence)"),
          h("div", { class: "board", "data-testid": "replay-belief", "data-turn": String(n), "data-source": fromApi ? "api" : "own" }, rules.locations.map((l) => tile(l, true))),
          h(
            "p",
            { class: "muted", "data-testid": "replay-belief-says" },
            fromApi
              ? `What the strongest AI Harry would believe on Harry's evidence ${n > 1 ? `after his move at turn ${n - 1}` : "at the start"}: ${unsure(map.entropy, rules)}; the chances add up to ${total.toFixed(2)}, the Horcruxes left (${s.horcruxes.length}).`
              : map && map.error
                ? `The AI's map could not be read (${map.error}); shown: the page's own estimate (independent locations).`
                : "Reading the AI's map; until it arrives: the page's own estimate (independent locations).",
          ),
          aiBelief ? h("p", { class: "muted", "data-testid": "ai-belief" }, `This game's AI Harry, as it chose its move at turn ${aiBelief.turn}: ${unsure(aiBelief.entropy, rules)}; most likely ${aiBelief.top.map((t) => `${place(t.location)} ${Math.round(t.p * 100)}%`).join(", ")}`) : null,
        ),
      ),
      h("div", { class: "panel" }, h("h3", {}, "How unsure Harry was, turn by turn"), entropyChart(screen, steps, beliefs, rules), h("p", { class: "legend" }, h("span", {}, h("i", { class: "sw gold" }), screen.beliefsLoaded ? "how unsure an AI Harry would be on Harry's evidence after each of his moves" : beliefs.length ? "how unsure the AI Harry was" : "how unsure Harry's evidence leaves him"), h("span", {}, h("i", { class: "sw red" }), "Voldemort relocated"), h("span", {}, h("i", { class: "sw violet" }), "decoy planted"), h("span", {}, h("i", { class: "sw blue" }), "this step"))),
      h(
        "div",
        { class: "panel" },
        h("h3", {}, "Every Voldemort move"),
        vmoves.length ? h("ul", { class: "log plain", "data-testid": "voldemort-moves" }, vmoves.map((x) => h("li", {}, h("b", { class: "turn" }, `Turn ${x.turn}`), ` ${describeAction(x.action)}`))) : h("p", {}, "Voldemort never moved a Horcrux nor planted a decoy."),
        h("p", { class: "muted" }, `and ${passes} pass${passes === 1 ? "" : "es"}.`),
      ),
      decisionPanel(screen.data.decisions || [], s),
    ),
  );
}
// a move's label as the decision notes keep it (`plant_decoy Knockturn`) in words
export const moveWords = (label) =>
  String(label || "")
    .replace(/^plant_decoy\b/, "planted a decoy at")
    .replace(/^relocate\b/, "moved a Horcrux:")
    .replace(/^search\b/, "searched")
    .replace(/^attack\b/, "attacked")
    .replace(/^pass\b/, "passed")
    .replace(/_/g, " ");
// the AI seats' decisions (the replay's `decisions`): the one behind this step, and a tally
export function decisionPanel(notes, step) {
  if (!notes.length) return h("div", { class: "panel", "data-testid": "decision" }, h("h3", {}, "AI decisions"), h("p", { class: "muted" }, "No AI seat in this game: people made every move."));
  const tally = {};
  for (const n of notes) {
    const key = `${seatName(n.seat)}${n.tier === "zero" ? " without a model" : " with a model"}${n.source === "fallback" ? " (fell back)" : ""}`;
    tally[key] = (tally[key] || 0) + 1;
  }
  const note = notes.find((n) => n.seat === step.actor && n.turn === step.turn);
  const rows = [];
  if (!note) rows.push(h("p", { class: "muted", "data-testid": "decision-none" }, step.actor === "setup" ? "Step through the game to see each AI move's decision." : `${seatName(step.actor)} is a person here: no AI decision.`));
  else {
    const who = { planner: "its own exact odds (no model call)", rule: "its rule (no model call)", llm: "the model", fallback: `the fallback (${note.fallback_reason || "no playable move"})`, heuristic: "the heuristic", explore: "exploration" }[note.source] || note.source;
    const level = levelOf(note.seat, note.brain);
    const memory = { zero: "none: sure enough to play without a model", compressed: "a short summary", full: "the whole working memory" }[note.tier] || note.tier;
    const facts = [["AI", `${level ? `${level.label}: ` : ""}${brainSays(note.seat, note.brain) || note.brain}`], ["memory it used", memory], ["chosen by", who], ["played", step.action ? describeAction(step.action) : moveWords(note.move)]];
    if (note.llm_move && note.llm_move !== note.move) facts.push(["the model's move", moveWords(note.llm_move)]);
    if (note.planner_move) facts.push(["without the model it would have", moveWords(note.planner_move)]);
    if (note.tokens_in || note.tokens_out) facts.push(["tokens", `${note.tokens_in} in, ${note.tokens_out} out`]);
    facts.push(["latency", `${(note.latency_ms || 0).toFixed(1)} ms`]);
    rows.push(h("dl", { class: "stats", "data-testid": "decision-facts" }, facts.map(([k, v]) => [h("dt", {}, k), h("dd", {}, v)])));
    if (note.context !== undefined && note.context !== null) rows.push(h("h3", {}, "The context the model saw"), h("pre", { class: "trace", "data-testid": "decision-context" }, note.context));
    if (note.offered && note.offered.length) rows.push(h("p", { class: "muted" }, `Offered: ${note.offered.join("; ")}`));
    if (note.reply !== undefined && note.reply !== null) rows.push(h("h3", {}, "What the model replied"), h("pre", { class: "trace", "data-testid": "decision-reply" }, note.reply || "(nothing)"));
    if (note.cut && note.cut.length) rows.push(h("p", { class: "muted" }, `Cut to the stored length: ${note.cut.join(", ")}.`));
  }
  return h(
    "div",
    { class: "panel", "data-testid": "decision" },
    h("h3", {}, `AI decision at this step`),
    rows,
    h("p", { class: "muted", "data-testid": "decision-tally" }, `${notes.length} AI decisions: ${Object.entries(tally).map(([k, v]) => `${k} ×${v}`).join(", ")}.`),
  );
}
export function entropyChart(screen, steps, beliefs, rules) {
  const W = 1000;
  const H = 200;
  const pad = 24;
  const lastTurn = steps[steps.length - 1].turn;
  const maxT = Math.min(rules.max_turns, Math.max(10, lastTurn));
  let points;
  const got = screen.beliefsLoaded ? steps.map((st, i) => (st.actor === "harry" ? [st.turn, screen.beliefs[beliefTurn(steps, i)]] : null)).filter((x) => x && x[1] && x[1].occupancy) : [];
  if (got.length) points = got.map(([t, b]) => [t, b.entropy]);
  else if (beliefs.length) points = beliefs.map((b) => [b.turn, b.entropy]);
  else {
    points = [];
    for (let i = 0; i < steps.length; i++) {
      if (steps[i].actor !== "harry") continue;
      const hist = historyUpTo(steps, i);
      points.push([steps[i].turn, entropyBits(evidence(rules, hist, rules.horcruxes - steps[i].destroyed).p)]);
    }
  }
  const maxE = Math.log2(rules.locations.length);
  const x = (t) => pad + ((W - 2 * pad) * (t - 1)) / Math.max(1, maxT - 1);
  const y = (e) => H - pad - ((H - 2 * pad) * Math.min(e, maxE)) / maxE;
  const chart = svg("svg", { class: "chart", viewBox: `0 0 ${W} ${H}`, preserveAspectRatio: "xMidYMid meet", "data-testid": "entropy-chart", role: "img", "aria-label": "Harry's uncertainty per turn" });
  chart.append(svg("line", { class: "axis", x1: pad, y1: H - pad, x2: W - pad, y2: H - pad }), svg("line", { class: "axis", x1: pad, y1: pad, x2: pad, y2: H - pad }));
  for (const st of steps) {
    if (st.actor !== "voldemort" || !st.action || st.action.type === "pass") continue;
    chart.append(svg("line", { class: st.action.type === "relocate" ? "reloc" : "decoy", x1: x(st.turn), x2: x(st.turn), y1: pad, y2: H - pad }));
  }
  if (points.length) chart.append(svg("polyline", { class: "ent", points: points.map(([t, e]) => `${x(t).toFixed(1)},${y(e).toFixed(1)}`).join(" ") }));
  const now = steps[screen.step].turn || 1;
  chart.append(svg("line", { class: "now", x1: x(now), x2: x(now), y1: pad, y2: H - pad }));
  const label = (tx, ty, text) => {
    const el = svg("text", { x: tx, y: ty });
    el.textContent = text;
    chart.append(el);
  };
  label(pad + 2, pad - 8, "no idea");
  label(W - pad - 40, H - 8, `turn ${maxT}`);
  label(pad, H - 8, "turn 1");
  return chart;
}
