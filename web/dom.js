// Horcrux Hunt in the browser: the constants, the state every screen shares, DOM helpers and the names of things.

import { api, levelOf } from "./api.js";

export const SEATS_KEY = "horcrux.seats.v1";
export const NAME_KEY = "horcrux.name.v1";
// set once the player has dismissed the first-game guide: it is not shown again
export const GUIDE_KEY = "horcrux.guide.v1";
// the browser's stable player key (the API's `player_key`): the same player id across games,
// so cross-game memory of this person builds up; a secret like the tokens, never in a URL
export const PLAYER_KEY = "horcrux.player_key";
export const playerKey = () => localStorage.getItem(PLAYER_KEY) || null;
export function keepPlayerKey(data) {
  if (!playerKey() && data && typeof data.player_key === "string") localStorage.setItem(PLAYER_KEY, data.player_key);
}
export const POLL_MS = [250, 500, 1000, 1000, 1000, 2000, 4000, 8000]; // by idle polls, then 8 s
export const LOBBY_POLL_MS = [5000, 5000, 10000];
// the pace of an AI-vs-AI game for a spectator, and of the replay's play: one turn a second
export const PACE_MS = 1000;
export const metrics = (window.horcruxMetrics = { moves: [] });
// this tab's part of an Idempotency-Key: a double click here replays, another tab is its own
export const TAB = Math.random().toString(36).slice(2, 10);

// what the screens share and change: the API's origin, the brains offered, the players'
// words (words.json, shared with the terminal client) and the screen on show
export const state = {
  api: window.location.origin,
  brains: null,
  words: { levels: { harry: [], voldemort: [] }, brains: { harry: {}, voldemort: {} }, guide: { harry: [], voldemort: [] }, wasted: {}, left: {} },
  current: null, // the screen on show: {kind, id, timer, ...}
};

// the players' words (words.json, shared with the terminal client): levels, brains, guide...

// ------------------------------------------------------------------ DOM helpers
export function h(tag, attrs, ...kids) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key === "class") el.className = value;
    else if (key.startsWith("on")) el.addEventListener(key.slice(2), value);
    else if (key === "heat") el.style.setProperty("--heat", String(value));
    else el.setAttribute(key, value === true ? "" : String(value));
  }
  for (const kid of kids.flat(Infinity)) {
    if (kid === null || kid === undefined || kid === false) continue;
    el.append(kid instanceof Node ? kid : String(kid));
  }
  return el;
}
export const svg = (tag, attrs) => {
  const el = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [k, v] of Object.entries(attrs || {})) el.setAttribute(k, String(v));
  return el;
};
export const root = () => document.getElementById("app");
export function show(...nodes) {
  root().replaceChildren(...nodes);
}
export function message(text, kind = "error") {
  const box = document.querySelector("[data-testid=message]");
  if (!box) return;
  box.className = `msg ${text ? kind : ""}`;
  box.textContent = text || "";
}
// a button that asks before it acts: a click shows the question with Yes and No in its
// place (in the page: a browser dialog would block it); Yes is `${testid}-confirm`
export function confirmButton(label, question, yes, onYes, testid, cls = "danger") {
  const holder = h("span", { class: "confirm" });
  const ask = () =>
    holder.replaceChildren(
      h("span", { class: "question", "data-testid": `${testid}-question` }, question),
      h("button", { class: cls, "data-testid": `${testid}-confirm`, onclick: onYes }, yes),
      h("button", { "data-testid": `${testid}-cancel`, onclick: () => holder.replaceChildren(button) }, "No"),
    );
  const button = h("button", { class: cls, "data-testid": testid, onclick: ask }, label);
  holder.append(button);
  return holder;
}
export const messageBox = () => h("div", { class: "msg", "data-testid": "message", role: "status" });

// ------------------------------------------------------------------ names of things
export const SPECIAL = { "godrics-hollow": "Godric's Hollow", "spinners-end": "Spinner's End" };
export const place = (slug) =>
  SPECIAL[slug] ||
  String(slug)
    .split("-")
    .map((w) => (w === "of" ? w : w.charAt(0).toUpperCase() + w.slice(1)))
    .join(" ");
export const seatName = (s) => (s === "harry" ? "Harry" : s === "voldemort" ? "Voldemort" : "spectator");
export const cap = (s) => String(s).charAt(0).toUpperCase() + String(s).slice(1);
export function ago(epoch) {
  const s = Math.max(0, Date.now() / 1000 - Number(epoch));
  if (s < 60) return `${Math.round(s)} s ago`;
  if (s < 3600) return `${Math.round(s / 60)} min ago`;
  return `${Math.round(s / 3600)} h ago`;
}
export function who(game, seat) {
  const info = game.seats[seat];
  if (!info) return "?";
  if (info.kind === "ai") {
    const level = levelOf(seat, info.brain);
    return level ? `AI (${level.label})` : `AI (${String(info.brain).split(":")[0]})`;
  }
  if (!info.taken) return "free seat";
  return info.name ? info.name : "a player";
}
export function describeAction(a) {
  if (!a) return "";
  switch (a.type) {
    case "search": return `searched ${place(a.location)}`;
    case "attack": return `attacked ${place(a.location)}`;
    case "ally": return `sent ${cap(a.ally)} to ${a.locations.map(place).join(" and ")}`;
    case "relocate": return `moved a Horcrux from ${place(a.from_location)} to ${place(a.to_location)}`;
    case "plant_decoy": return `planted a decoy at ${place(a.location)}`;
    case "pass": return "passed";
    default: return a.type;
  }
}
export function resultOf(action, observations) {
  const one = observations.length === 1 ? observations[0] : null;
  const at = action && (action.location || (action.locations && action.locations.length === 1 && action.locations[0]));
  if (one && at === one.location) return `${one.outcome}${one.sensor === "hermione" ? " (Hermione)" : ""}`;
  return observations.map(describeObs).join("; ");
}
export const describeObs = (o) =>
  o.kind === "search"
    ? `${place(o.location)}: ${o.outcome}${o.sensor === "hermione" ? " (Hermione)" : ""}`
    : `${place(o.location)}: ${o.outcome}`;
