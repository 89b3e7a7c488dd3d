// Horcrux Hunt in the browser: the lobby's lists, your memory, creating and joining a game.

import { api, holdSeat, levelOf, plural } from "./api.js";
import { NAME_KEY, ago, confirmButton, h, keepPlayerKey, message, place, playerKey, seatName, state, who } from "./dom.js";
import { go } from "./routes.js";

// ------------------------------------------------------------------ your memory
// What the AI remembers about this browser's player (`GET /players/me/memory` with the
// player key, never in a URL), in the AI's own sentences, and Forget (`DELETE`), asked first.
export const LOCATION_SLUG = /\b[a-z]+(?:-[a-z]+)+\b/g;
export function memoryWords(item) {
  if (item.subject === "style") return "A summary of how you tend to play, fitted over your games.";
  return item.text.replace(/player:[0-9a-f]{16}/g, "you").replace(LOCATION_SLUG, (slug) => place(slug));
}
export function memoryPanel(screen) {
  const box = h("div", { class: "panel", "data-testid": "my-memory" }, h("h2", {}, "What the AI remembers about you"));
  const body = h("div", {}, h("p", { class: "muted" }, "Reading…"));
  box.append(body);
  const key = playerKey();
  if (!key) {
    body.replaceChildren(h("p", { class: "muted", "data-testid": "memory-none" }, "Nothing: this browser has not played yet. The AI Harry learns how you hide the Horcruxes when you play Voldemort against it."));
    return box;
  }
  const fillIn = async (said) => {
    let data;
    try {
      data = (await api("GET", "/players/me/memory", { token: key })).data;
    } catch (err) {
      body.replaceChildren(h("p", { class: "muted" }, `Your memory could not be read (${err.code}): ${err.message}`));
      return;
    }
    if (state.current !== screen) return;
    const kept = data.scopes.filter((sc) => sc.items.length);
    const parts = [];
    if (said) parts.push(h("p", { class: "msg info", "data-testid": "memory-said" }, said));
    if (!kept.length) {
      parts.push(h("p", { class: "muted", "data-testid": "memory-none" }, "Nothing about you yet. The AI Harry learns how you hide the Horcruxes when you play Voldemort against it; each game after that starts from what it learned."));
    }
    for (const sc of kept) {
      const level = levelOf("harry", sc.agent);
      parts.push(
        h("h3", {}, `${level ? `The ${level.label} AI Harry` : "An AI Harry"}, after ${plural(sc.games, "game")} against you`),
        h("ul", { class: "log plain", "data-testid": "memory-items" }, sc.items.map((it) => h("li", {}, memoryWords(it)))),
      );
    }
    if (kept.length) {
      parts.push(
        h(
          "div",
          { class: "row" },
          confirmButton("Forget me", "Forget all of this? Your next game starts as if the AI had never met you.", "Yes, forget", async () => {
            try {
              await api("DELETE", "/players/me/memory", { token: key });
              fillIn("Forgotten: the AI remembers nothing about you now.");
            } catch (err) {
              body.prepend(h("p", { class: "msg error" }, `Nothing was forgotten (${err.code}): ${err.message}`));
            }
          }, "forget-me"),
        ),
      );
    }
    body.replaceChildren(...parts);
  };
  fillIn(null);
  return box;
}

export function withName(seat, name) {
  // the creator's own seat: their name, if any, and their player key, if they have one
  const trimmed = String(name || "").trim();
  const key = playerKey();
  return { ...seat, ...(trimmed ? { name: trimmed } : {}), ...(key ? { player_key: key } : {}) };
}

export function fillOpen(tbody, games, nameInput) {
  tbody.replaceChildren();
  if (!games.length) tbody.append(h("tr", {}, h("td", { class: "muted", colspan: 5 }, "No open game. Start one!")));
  for (const g of games) {
    const names = g.names || {};
    const seated = Object.entries(names).map(([s, n]) => `${n} (${seatName(s)})`).join(", ");
    tbody.append(
      h(
        "tr",
        { "data-testid": "open-game", "data-game": g.game_id },
        h("td", {}, h("code", {}, g.game_id.slice(0, 8))),
        h("td", {}, g.rules),
        h("td", {}, seated || "waiting", h("br"), h("span", { class: "muted" }, `free: ${g.open_seats.map(seatName).join(", ")}`)),
        h("td", {}, ago(g.created_at)),
        h(
          "td",
          { class: "row" },
          g.open_seats.map((s) =>
            h("button", { "data-testid": `join-${s}`, onclick: () => joinGame(g.game_id, s, nameInput.value) }, `Join as ${seatName(s)}`),
          ),
        ),
      ),
    );
  }
}
export const listHead = () => h("thead", {}, h("tr", {}, h("th", {}, "game"), h("th", {}, "rules"), h("th", {}, "players"), h("th", {}, "created"), h("th", {}, "")));
// the players of a listed game: a person's name (the list's `names`), else who holds the
// seat as the game itself says (read once per game: a seat's kind never changes)
export const seatsSeen = new Map();
export function players(g) {
  const names = g.names || {};
  const seats = seatsSeen.get(g.game_id);
  const one = (s) => {
    if (names[s]) return names[s];
    if (!seats || !seats[s]) return "…";
    if (seats[s].kind === "ai") return who({ seats }, s);
    return seats[s].taken ? "a player with no name" : "free seat";
  };
  return ["harry", "voldemort"].map((s) => `${seatName(s)}: ${one(s)}`).join(", ");
}
export async function learnSeats(games) {
  const unknown = games.filter((g) => !seatsSeen.has(g.game_id) && !(g.names && g.names.harry && g.names.voldemort));
  await Promise.all(
    unknown.map(async (g) => {
      try {
        seatsSeen.set(g.game_id, (await api("GET", `/games/${encodeURIComponent(g.game_id)}`)).data.seats);
      } catch {
        /* said as "…" until the next refresh */
      }
    }),
  );
}
export function fillList(tbody, games, label, href, empty) {
  tbody.replaceChildren();
  if (!games.length) tbody.append(h("tr", {}, h("td", { class: "muted", colspan: 5 }, empty)));
  for (const g of games) {
    tbody.append(
      h(
        "tr",
        { "data-testid": "listed-game", "data-game": g.game_id },
        h("td", {}, h("code", {}, g.game_id.slice(0, 8))),
        h("td", {}, g.rules),
        h("td", {}, players(g)),
        h("td", {}, ago(g.created_at)),
        h("td", {}, h("button", { onclick: () => go(href(g.game_id)) }, label)),
      ),
    );
  }
}

export async function createGame(body, name) {
  message("");
  try {
    const r = await api("POST", "/games", { body });
    keepPlayerKey(r.data);
    if (r.data.token) holdSeat(r.data.game_id, r.data.seat, r.data.token, String(name || "").trim(), r.data.invite);
    go(`#/game/${encodeURIComponent(r.data.game_id)}`);
  } catch (err) {
    message(`The game was not created: ${err.message}`);
  }
}
export async function joinGame(gameId, seat, name, invite) {
  message("");
  localStorage.setItem(NAME_KEY, name || "");
  const trimmed = String(name || "").trim();
  try {
    const body = { ...(trimmed ? { name: trimmed } : {}), ...(playerKey() ? { player_key: playerKey() } : {}) };
    // a private game's code goes to the API as it asks (`?invite=`), never in the page's URL
    const query = invite ? `?invite=${encodeURIComponent(invite)}` : "";
    const r = await api("POST", `/games/${encodeURIComponent(gameId)}/seats/${seat}${query}`, Object.keys(body).length ? { body } : {});
    keepPlayerKey(r.data);
    holdSeat(gameId, seat, r.data.token, trimmed);
    // replace, not push: the invite link (its code) does not stay in this tab's history
    window.location.replace(`#/game/${encodeURIComponent(gameId)}`);
  } catch (err) {
    message(`You did not join: ${err.message}`);
  }
}
