// Horcrux Hunt in the browser: a seat's controls, the board, the panels and the end.

import { api, fill, markOver, pct, playerName, plural, running } from "./api.js";
import { POLL_MS, TAB, cap, describeAction, h, metrics, place, resultOf, seatName, state } from "./dom.js";
import { evidence, pacedBehind, refreshGame, renderGame } from "./game.js";
import { createGame, withName } from "./lists.js";
import { go } from "./routes.js";

export function controls(screen) {
  const g = screen.game;
  const legal = g.legal;
  const bar = h("div", { class: "actions", "data-testid": "actions" });
  const add = (action, label, key, enabled) =>
    bar.append(
      h(
        "button",
        {
          class: screen.action === action ? "on" : "",
          "data-testid": `action-${action}`,
          disabled: !enabled || screen.busy,
          onclick: () => choose(screen, action),
        },
        label,
        h("kbd", {}, key),
      ),
    );
  if (g.your_seat === "harry") {
    add("search", "Search", "S", legal.types.includes("search"));
    add("attack", `Attack (${g.view.attacks_left} left)`, "A", legal.attack);
    for (const [ally, key] of [["ron", "R"], ["hermione", "H"], ["dumbledore", "D"]]) {
      if (ally in g.view.allies) add(ally, cap(ally), key, ally in legal.allies);
    }
  } else {
    add("relocate", "Move a Horcrux", "M", legal.types.includes("relocate"));
    add("plant_decoy", "Plant a decoy", "D", legal.types.includes("plant_decoy"));
    add("pass", "Pass", "P", legal.types.includes("pass"));
  }
  const hint = screen.action
    ? hintFor(screen)
    : "Pick an action (button or key), then a location (click, or the arrow keys and Enter).";
  return h("div", { class: "panel" }, h("h3", {}, "Your move"), bar, h("p", { class: "muted", "data-testid": "hint" }, hint));
}
export function hintFor(screen) {
  const a = screen.action;
  if (a === "ron") return screen.picks.length ? "Ron: pick the second location." : "Ron: pick two different locations.";
  if (a === "relocate") return screen.picks.length ? `Move the Horcrux from ${place(screen.picks[0])} to: pick a free location.` : "Pick the Horcrux to move.";
  if (a === "plant_decoy") return "Pick a free location for the decoy.";
  return `${cap(a)}: pick a location. Esc cancels.`;
}
export function targets(screen) {
  const legal = screen.game.legal;
  const a = screen.action;
  if (!legal || !a) return [];
  if (a === "relocate") return screen.picks.length ? legal.relocate_to : legal.relocate_from;
  if (a === "plant_decoy") return legal.decoy_at;
  if (a === "ron") return legal.locations.filter((l) => !screen.picks.includes(l));
  return legal.locations;
}
export function choose(screen, action) {
  if (screen.busy) return;
  screen.keyboard = false; // a click: no keyboard cursor until a key moves it
  screen.action = screen.action === action ? null : action;
  screen.picks = [];
  screen.note = null;
  if (action === "pass" && screen.action) return play(screen, { type: "pass" });
  renderGame(screen);
}
export function pick(screen, loc) {
  const a = screen.action;
  if (!a || screen.busy || !targets(screen).includes(loc)) return;
  if (a === "search" || a === "attack") return play(screen, { type: a, location: loc });
  if (a === "hermione" || a === "dumbledore") return play(screen, { type: "ally", ally: a, locations: [loc] });
  if (a === "plant_decoy") return play(screen, { type: "plant_decoy", location: loc });
  if (a === "ron") {
    if (screen.picks.length === 0) {
      screen.picks = [loc];
      return renderGame(screen);
    }
    return play(screen, { type: "ally", ally: "ron", locations: [screen.picks[0], loc] });
  }
  if (a === "relocate") {
    if (screen.picks.length === 0) {
      screen.picks = [loc];
      return renderGame(screen);
    }
    return play(screen, { type: "relocate", from_location: screen.picks[0], to_location: loc });
  }
}

export async function play(screen, action) {
  if (screen.busy || !screen.token) return; // one move in flight at most: a double click plays once
  const started = performance.now();
  const g = screen.game;
  screen.busy = true;
  const version = g.version;
  try {
    const r = await api("POST", `/games/${encodeURIComponent(screen.id)}/moves`, {
      token: screen.token,
      body: action,
      // the version this page last saw: a stale page (or a second click) cannot play a turn
      headers: { "if-match": `"${version}"`, "idempotency-key": `web-${TAB}-${g.your_seat}-v${version}` },
    });
    if (state.current !== screen) return;
    screen.game = r.data.game;
    screen.etag = r.etag;
    if (r.data.game.status === "over") markOver(screen.id);
    const ev = r.data.event;
    const result = ev && ev.observations && ev.observations.length ? `: ${resultOf(action, ev.observations)}` : "";
    const why = ev && ev.observations ? whyWasted(r.data.game.view.history, { turn: ev.turn ?? g.view.turn, observations: ev.observations }, voiceOf(g), g.view.rules) : null;
    screen.note = { text: `You ${describeAction(action)}${result}.${why ? ` ${why}` : ""}`, kind: "info" };
  } catch (err) {
    if (state.current !== screen) return;
    if (err.data && err.data.game) screen.game = err.data.game;
    screen.note = { text: `That move was not played (${err.code}): ${err.message}`, kind: "error" };
    if (err.code === "precondition_failed" || err.code === "conflict") screen.etag = null;
  } finally {
    screen.busy = false;
    screen.action = null;
    screen.picks = [];
  }
  screen.idle = 0;
  renderGame(screen);
  requestAnimationFrame(() => metrics.moves.push(performance.now() - started));
  refreshSoon(screen); // the opponent's reply (or, after a refusal, the game as it is now)
}
export function refreshSoon(screen) {
  clearTimeout(screen.timer);
  screen.timer = setTimeout(() => refreshGame(screen, false), POLL_MS[0]);
}

// The overlay: what an AI Harry (the server's default planner) believes on Harry's public
// evidence (`GET /games/{id}/belief`), fetched once per version of the game; until it
// arrives (or if it cannot be had) the page's own estimate stands in, and says so.
export function aiBelief(screen) {
  const g = screen.game;
  const held = screen.aiBelief;
  if (held && held.version === g.version) return held;
  if (!screen.beliefLoading) {
    screen.beliefLoading = true;
    api("GET", `/games/${encodeURIComponent(screen.id)}/belief`, { token: screen.token })
      .then((r) => {
        screen.aiBelief = r.data;
        if (state.current === screen && screen.showBelief) renderGame(screen);
      })
      .catch(() => {
        screen.aiBelief = { version: g.version, occupancy: null };
      })
      .finally(() => {
        screen.beliefLoading = false;
      });
  }
  return null;
}

export function renderBoard(screen, opts = {}) {
  const g = screen.game;
  const v = g.view;
  const locs = v.rules.locations;
  const tgt = new Set(targets(screen));
  const truthH = new Set(v.horcrux_locations || []);
  const truthD = new Set(v.decoy_locations || []);
  const own = evidence(v.rules, v.history, v.horcruxes_left);
  // the AI's map is of the game as it is now: not while a paced view shows an earlier turn
  const ai = screen.showBelief && !opts.heat && !pacedBehind(screen) ? aiBelief(screen) : null;
  const ev = ai && ai.occupancy ? { p: ai.occupancy } : own;
  screen.beliefSource = ai && ai.occupancy ? "ai" : "own";
  const last = v.history.length ? v.history[v.history.length - 1] : null;
  const lastLocs = new Set(last ? last.observations.map((o) => o.location) : []);
  const chips = Object.fromEntries(locs.map((l) => [l, []]));
  for (const rec of v.history) for (const o of rec.observations) chips[o.location].push([rec.turn, o]);
  if (screen.cursor >= locs.length) screen.cursor = 0;
  // a tile is a button only while a location is being picked (an action chosen on this
  // seat's turn); otherwise it is inert: a click out of turn shows nothing, not a focus ring
  const picking = Boolean(screen.action && g.legal && running(g) && g.to_move === g.your_seat);
  const board = h("div", { class: `board ${picking ? "picking" : "idle"}`, "data-testid": "board", role: "grid" });
  locs.forEach((loc, i) => {
    const cls = ["tile"];
    if (tgt.has(loc)) cls.push("target");
    if (screen.picks.includes(loc)) cls.push("picked");
    // the keyboard cursor (blue outline) only when the keyboard drives the pick; the last
    // move's tiles get a gold bar, never an outline: two styles, never two outlines
    if (screen.action && screen.keyboard && i === screen.cursor) cls.push("cursor");
    if (truthH.has(loc)) cls.push("horcrux");
    if (truthD.has(loc)) cls.push("decoy");
    if (lastLocs.has(loc)) cls.push("last");
    board.append(
      h(
        picking ? "button" : "div",
        {
          class: cls.join(" "),
          "data-testid": `loc-${loc}`,
          "data-loc": loc,
          role: picking ? null : "gridcell",
          disabled: picking ? !tgt.has(loc) || screen.busy : false,
          heat: screen.showBelief || opts.heat ? ev.p[loc].toFixed(3) : 0,
          onclick: picking ? () => { screen.keyboard = false; pick(screen, loc); } : null,
          title: place(loc),
        },
        h("span", { class: "name" }, place(loc)),
        truthH.has(loc) || truthD.has(loc)
          ? h("span", { class: "marks" }, truthH.has(loc) ? h("span", { class: "h" }, "HORCRUX") : null, truthD.has(loc) ? h("span", { class: "d" }, "DECOY") : null)
          : null,
        h("span", { class: "chips" }, chips[loc].map(([t, o]) => chip(t, o))),
        screen.showBelief ? h("span", { class: "p" }, `${Math.round(ev.p[loc] * 100)}%`) : null,
      ),
    );
  });
  return board;
}
export function chip(turn, o) {
  const sensor = o.sensor === "hermione" ? "H" : "";
  if (o.kind === "search") return h("span", { class: `chip ${o.outcome === "positive" ? "pos" : "neg"}`, title: `turn ${turn}: search ${o.outcome}` }, `${turn}${sensor}${o.outcome === "positive" ? "+" : "−"}`);
  if (o.kind === "attack") return h("span", { class: `chip ${o.outcome === "destroyed" ? "hit" : "miss"}`, title: `turn ${turn}: attack ${o.outcome}` }, `${turn}⚔${o.outcome === "destroyed" ? "✓" : o.outcome === "decoy" ? "decoy" : "∅"}`);
  return h("span", { class: "chip rev", title: `turn ${turn}: Dumbledore: ${o.outcome}` }, `${turn}★${o.outcome}`);
}

export function harryPanel(screen) {
  const g = screen.game;
  const v = g.view;
  const allies = Object.entries(v.allies).map(([name, a]) =>
    h("dd", {}, `${cap(name)}: ${a.available ? "ready" : a.uses_left === 0 ? "used up" : `rests ${a.rest} more turn${a.rest === 1 ? "" : "s"}`}${a.uses_left === null || a.uses_left === undefined || a.uses_left === 0 ? "" : `, ${a.uses_left} use${a.uses_left === 1 ? "" : "s"} left`}`),
  );
  const toggle = h("button", { "data-testid": "belief-toggle", class: screen.showBelief ? "on" : "", onclick: () => { screen.showBelief = !screen.showBelief; renderGame(screen); } }, screen.showBelief ? "Hide the evidence map" : "Show the evidence map", h("kbd", {}, "B"));
  return h(
    "div",
    { class: "panel", "data-testid": "harry-panel" },
    h("h2", {}, "Harry's hunt"),
    h(
      "dl",
      { class: "stats" },
      h("dt", {}, "Attacks left"), h("dd", { "data-testid": "attacks-left" }, String(v.attacks_left)),
      h("dt", {}, "Horcruxes"), h("dd", { "data-testid": "destroyed" }, `${v.horcruxes_destroyed} destroyed, ${v.horcruxes_left} left`),
      allies.length ? [h("dt", {}, "Allies"), h("dd", { "data-testid": "allies" }, allies.map((a, i) => [i ? h("br") : null, a.textContent]))] : [],
    ),
    h("p", { class: "muted" }, "Chips: turn and result: + positive, − negative, ⚔ an attack, ★ Dumbledore; H: Hermione's search."),
    toggle,
    screen.showBelief
      ? h(
          "p",
          { class: "muted", "data-testid": "belief-source" },
          screen.beliefSource === "ai"
            ? "Shading: what the strongest AI Harry believes on your evidence: each location's chance of a real Horcrux, with Voldemort's relocations and decoys priced in."
            : "Shading: each location's chance by Bayes on Harry's own evidence (independent locations), until the AI Harry's map arrives.",
        )
      : null,
  );
}

export function voldemortPanel(screen) {
  const v = screen.game.view;
  const last = v.history.length ? v.history[v.history.length - 1] : null;
  const ev = evidence(v.rules, v.history, v.horcruxes_left);
  const top = [...v.rules.locations].sort((a, b) => ev.score[b] - ev.score[a]).filter((l) => ev.score[l] > 0).slice(0, 3);
  return h(
    "div",
    { class: "panel", "data-testid": "voldemort-panel" },
    h("h2", {}, "Voldemort's secrets"),
    h(
      "dl",
      { class: "stats" },
      h("dt", {}, "Horcruxes"), h("dd", { "data-testid": "truth" }, v.horcrux_locations.map(place).join(", ") || "none left"),
      h("dt", {}, "Decoys"), h("dd", {}, v.decoy_locations.map(place).join(", ") || "none"),
      h("dt", {}, "Charges"), h("dd", { "data-testid": "charges" }, `${plural(v.relocations_left, "move")} of a Horcrux, ${plural(v.decoys_left, "decoy")} left`),
      h("dt", {}, "Harry's attacks"), h("dd", {}, `${v.attacks_left} left; ${plural(v.horcruxes_destroyed, "Horcrux", "Horcruxes")} destroyed`),
      h("dt", {}, "Harry's last move"), h("dd", { "data-testid": "last-harry" }, last ? `turn ${last.turn}: ${describeAction(last.action)}: ${resultOf(last.action, last.observations)}` : "none yet"),
      h("dt", {}, "His evidence points to"), h("dd", {}, top.length ? top.map(place).join(", ") : "nowhere yet"),
    ),
  );
}

// After an attack that destroyed nothing: one line on what it can mean, from Harry's own
// history before that turn (his positives there), never from anything he cannot see; said
// to the one who reads it (`voice`: harry, voldemort or spectator), in words.json's phrases
export function whyWasted(history, rec, voice, rules) {
  const att = rec.observations.find((o) => o.kind === "attack");
  if (!att || att.outcome === "destroyed") return null;
  const at = att.location;
  const before = history.filter((r) => r.turn < rec.turn);
  const pos = [];
  for (const r of before) for (const o of r.observations) if (o.kind === "search" && o.location === at && o.outcome === "positive") pos.push(r.turn);
  const n = pos.length;
  const words = state.words.wasted || {};
  const said = words[voice] || words.harry;
  if (!said) return null;
  const vars = {
    place: place(at),
    turn: n ? pos[n - 1] : "",
    f: rules && rules.sensor ? pct(rules.sensor.f) : "15%",
    positives: n ? fill(n === 1 ? words.positives : words.positives_many, { n }) : "",
  };
  if (att.outcome === "decoy") return fill(said.decoy, vars);
  return fill(n ? said.moved : said.unpointed, vars);
}
export const voiceOf = (g) => (g.your_seat === "voldemort" ? "voldemort" : g.your_seat === "harry" ? "harry" : "spectator");

export function logPanel(screen) {
  const v = screen.game.view;
  const voice = voiceOf(screen.game);
  const items = [...v.history].reverse().map((rec) => {
    const why = whyWasted(v.history, rec, voice, v.rules);
    return h(
      "li",
      {},
      h("b", { class: "turn" }, `Turn ${rec.turn}`),
      ` Harry ${describeAction(rec.action)}: ${resultOf(rec.action, rec.observations)}`,
      why ? h("span", { class: "why", "data-testid": "why-wasted" }, why) : null,
    );
  });
  // one label per item, the turn's (a numbered list would repeat it, and cut it past 9)
  return h("div", { class: "panel" }, h("h3", {}, "Harry's log"), items.length ? h("ul", { class: "log plain", "data-testid": "log" }, items) : h("p", { class: "muted" }, "No move yet."));
}

export function endPanel(screen) {
  const g = screen.game;
  const won = g.your_seat && g.winner === g.your_seat;
  const lost = g.your_seat && g.winner && g.winner !== g.your_seat;
  const title = won ? "You won!" : lost ? "You lost." : `${seatName(g.winner)} wins.`;
  const truth = h("div", { "data-testid": "end-truth" }, h("p", { class: "muted" }, "Reading where everything really was…"));
  endTruth(screen, truth);
  return h(
    "div",
    { class: "panel end", "data-testid": "end" },
    h("h2", {}, title),
    h("p", {}, `${seatName(g.winner)} wins: ${g.end_reason || ""}.`),
    truth,
    h(
      "div",
      { class: "row" },
      h("button", { class: "primary", "data-testid": "open-replay", onclick: () => go(`#/replay/${encodeURIComponent(g.game_id)}`) }, "See the replay"),
      g.your_seat ? h("button", { "data-testid": "rematch", onclick: () => rematch(g) }, "Rematch") : null,
      h("button", { onclick: () => go("#/") }, "Lobby"),
    ),
  );
}
// where every Horcrux and decoy really was: the replay (released after the end), read once
export async function endTruth(screen, box) {
  if (!screen.truth) {
    try {
      screen.truth = (await api("GET", `/games/${encodeURIComponent(screen.id)}/replay`)).data.replay;
    } catch (err) {
      box.replaceChildren(h("p", { class: "muted" }, `Where everything was could not be read (${err.code}): ${err.message}`));
      return;
    }
  }
  const steps = screen.truth.steps;
  const lines = [h("li", {}, h("b", { class: "turn" }, "Start"), ` Horcruxes at ${steps[0].horcruxes.map(place).join(", ")}`)];
  for (const st of steps) {
    if (st.actor === "voldemort" && st.action && st.action.type !== "pass") lines.push(h("li", {}, h("b", { class: "turn" }, `Turn ${st.turn}`), ` Voldemort ${describeAction(st.action)}`));
  }
  const last = steps[steps.length - 1];
  const left = last.horcruxes.length ? `${last.horcruxes.length === 1 ? "One Horcrux left, at" : "Horcruxes left at"} ${last.horcruxes.map(place).join(", ")}` : "No Horcrux left";
  const decoys = last.decoys.length ? `${last.decoys.length === 1 ? "a decoy at" : "decoys at"} ${last.decoys.map(place).join(", ")}` : "no decoy standing";
  lines.push(h("li", { "data-testid": "end-state" }, h("b", { class: "turn" }, "End"), ` ${left}; ${decoys}.`));
  box.replaceChildren(h("h3", {}, "Where everything really was"), h("ul", { class: "log plain" }, lines));
}
export async function rematch(g) {
  const seat = (s) => {
    const info = g.seats[s];
    if (s === g.your_seat) return withName({ kind: "human" }, playerName());
    return info.kind === "ai" ? { kind: "ai", brain: info.brain } : { kind: "human" };
  };
  await createGame({ seats: { harry: seat("harry"), voldemort: seat("voldemort") }, rules: g.rules }, playerName());
}
