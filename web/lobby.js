// Horcrux Hunt in the browser: the lobby.

import { api, brainSays, fill, heldSeats, leaveSeat, levelOf, levelSays, loadBrains, markOver, playerName } from "./api.js";
import { LOBBY_POLL_MS, NAME_KEY, confirmButton, h, message, messageBox, seatName, show, state } from "./dom.js";
import { createGame, fillList, fillOpen, learnSeats, listHead, memoryPanel, withName } from "./lists.js";
import { go, route } from "./routes.js";

// ------------------------------------------------------------------ the lobby
export function brainSelect(seat, testid) {
  const list = (state.brains && state.brains[seat]) || [];
  // the name only (a sentence would widen the form past a phone's width); the chosen one's
  // sentence is said under the list, in players' words
  return h(
    "select",
    { name: `${seat}-brain`, "data-testid": testid, "aria-label": `${seatName(seat)} AI brain` },
    list.map((b) => h("option", { value: b.name, selected: b.default, title: brainSays(seat, b.name) || null }, b.name)),
  );
}
// a select's explanation line, kept in step with its choice
export function explained(select, say, testid) {
  const line = h("p", { class: "muted says", "data-testid": testid });
  const update = () => {
    line.textContent = say(select.value);
  };
  select.addEventListener("change", update);
  update();
  return line;
}

// the levels of the AI opponents, weakest first, from words.json: each one's label and
// sentence come with its measured strength (the evaluation's win rate of the AI Harry);
// only the brains the server offers are listed (the rest: "any brain", advanced)
export function namedSelect(seat, testid) {
  const list = (state.brains && state.brains[seat]) || [];
  const known = new Map(list.map((b) => [b.name, b]));
  const offered = (state.words.levels[seat] || []).filter((l) => known.has(l.brain));
  const fallback = list.find((b) => b.default) || list[0];
  const preferred = offered.find((l) => known.get(l.brain).default) || offered[0];
  const options = offered.length ? offered : fallback ? [{ label: "Standard", brain: fallback.name, sentence: brainSays(seat, fallback.name), harry_wins: null }] : [];
  return h(
    "select",
    { name: `${seat}-level`, "data-testid": testid, "aria-label": `${seatName(seat)}: the AI opponent` },
    options.map((l) =>
      h("option", { value: l.brain, selected: preferred && l.brain === preferred.brain, "data-harry-wins": l.harry_wins === null ? null : String(l.harry_wins) }, l.label),
    ),
  );
}

export const OPPONENT_LISTED = "another person (they join from the lobby)";
export const OPPONENT_INVITED = "another person (you send them an invite link)";
export async function lobbyScreen() {
  const screen = (state.current = { kind: "lobby", timer: null, idle: 0 });
  await loadBrains();
  if (state.current !== screen) return;
  const nameInput = h("input", {
    "data-testid": "player-name",
    name: "name",
    value: playerName(),
    placeholder: "optional, 1-32 characters",
    autocomplete: "nickname",
  });
  nameInput.addEventListener("change", () => localStorage.setItem(NAME_KEY, nameInput.value));
  const mySeat = h(
    "select",
    { name: "seat", "data-testid": "my-seat" },
    h("option", { value: "harry" }, "Harry (the hunter)"),
    h("option", { value: "voldemort" }, "Voldemort (the hider)"),
    h("option", { value: "none" }, "nobody: watch AI vs AI"),
  );
  const opponent = h(
    "select",
    { name: "opponent", "data-testid": "opponent" },
    h("option", { value: "ai" }, "the AI"),
    h("option", { value: "human" }, OPPONENT_LISTED),
  );
  const rules = h(
    "select",
    { name: "rules", "data-testid": "rules" },
    h("option", { value: "standard" }, "standard (with Ron, Hermione and Dumbledore)"),
    h("option", { value: "classic" }, "classic (no allies)"),
  );
  const privateBox = h("input", { type: "checkbox", name: "private", "data-testid": "private" });
  const privateRow = h("label", {}, h("span", {}, "Private"), privateBox, " not listed: you send an invite link");
  const harryBrain = brainSelect("harry", "harry-brain");
  const voldemortBrain = brainSelect("voldemort", "voldemort-brain");
  const seed = h("input", { name: "seed", "data-testid": "seed", inputmode: "numeric", placeholder: "random" });
  const harryLevel = namedSelect("harry", "harry-level");
  const voldemortLevel = namedSelect("voldemort", "voldemort-level");
  const advanced = h(
    "details",
    { "data-testid": "advanced" },
    h("summary", { class: "muted" }, "Advanced: any AI"),
    h("p", { class: "muted" }, "When open, these choose the AI instead of the level above. Each one is explained under its list."),
  );
  const levelLine = (seat, select) => explained(select, (brain) => {
    const level = levelOf(seat, brain);
    return level ? levelSays(level) : brainSays(seat, brain);
  }, `${seat}-level-says`);
  const harryRow = h("div", {}, h("label", {}, h("span", {}, "AI Harry"), harryLevel), levelLine("harry", harryLevel));
  const voldemortRow = h("div", {}, h("label", {}, h("span", {}, "AI Voldemort"), voldemortLevel), levelLine("voldemort", voldemortLevel));
  const harryAny = h("div", {}, h("label", {}, h("span", {}, "any Harry"), harryBrain), explained(harryBrain, (b) => brainSays("harry", b), "harry-brain-says"));
  const voldemortAny = h("div", {}, h("label", {}, h("span", {}, "any Voldemort"), voldemortBrain), explained(voldemortBrain, (b) => brainSays("voldemort", b), "voldemort-brain-says"));
  advanced.append(harryAny, voldemortAny);
  const sync = () => {
    const me = mySeat.value;
    opponent.disabled = me === "none";
    if (me === "voldemort" && opponent.value === "human") opponent.value = "ai";
    opponent.options[1].disabled = me === "voldemort"; // the creator of a 2-player game is Harry
    const ai = opponent.value === "ai" || me === "none";
    harryRow.hidden = harryAny.hidden = !(me === "none" || (me === "voldemort" && ai));
    voldemortRow.hidden = voldemortAny.hidden = !(me === "none" || (me === "harry" && ai));
    advanced.hidden = harryRow.hidden && voldemortRow.hidden;
    privateRow.hidden = !(me !== "none" && opponent.value === "human");
    if (privateRow.hidden) privateBox.checked = false;
    opponent.options[1].textContent = privateBox.checked ? OPPONENT_INVITED : OPPONENT_LISTED;
  };
  mySeat.addEventListener("change", sync);
  privateBox.addEventListener("change", sync);
  opponent.addEventListener("change", sync);
  sync();
  const form = h(
    "form",
    { "data-testid": "new-game-form" },
    h("label", {}, h("span", {}, "You play"), mySeat),
    h("label", {}, h("span", {}, "Against"), opponent),
    privateRow,
    harryRow,
    voldemortRow,
    advanced,
    h("label", {}, h("span", {}, "Rules"), rules),
    h("label", {}, h("span", {}, "Seed"), seed),
    h("div", { class: "row" }, h("button", { class: "primary", type: "submit", "data-testid": "new-game" }, "Start a new game")),
  );
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    localStorage.setItem(NAME_KEY, nameInput.value);
    const me = mySeat.value;
    const seat = (s) => {
      if (me === s) return withName({ kind: "human" }, nameInput.value);
      if (me !== "none" && opponent.value === "human") return { kind: "human" };
      const chosen = advanced.open ? (s === "harry" ? harryBrain : voldemortBrain) : s === "harry" ? harryLevel : voldemortLevel;
      return { kind: "ai", brain: chosen.value };
    };
    const body = { seats: { harry: seat("harry"), voldemort: seat("voldemort") }, rules: rules.value };
    if (privateBox.checked) body.private = true;
    if (seed.value.trim() !== "") {
      if (!/^\d{1,19}$/.test(seed.value.trim())) return message("The seed must be a whole number (0 or more), or empty for a random one.");
      body.seed = Number(seed.value.trim());
    }
    await createGame(body, nameInput.value);
  });

  const mine = h("tbody", {});
  const open = h("tbody", {});
  const active = h("tbody", {});
  const over = h("tbody", {});
  show(
    h(
      "section",
      { "data-testid": "lobby", class: "lobby" },
      messageBox(),
      h(
        "div",
        { class: "grid2" },
        h(
          "div",
          {},
          h("div", { class: "panel" }, h("h2", {}, "New game"), h("label", {}, h("span", {}, "Your name"), nameInput), form),
          h("div", { class: "panel" }, h("h2", {}, "Your games"), h("table", {}, mine)),
          memoryPanel(screen),
          h(
            "div",
            { class: "panel" },
            h("h2", {}, "How to play"),
            h(
              "ul",
              { class: "howto" },
              h("li", {}, "Harry has 50 turns and 7 attacks to destroy Voldemort's 3 Horcruxes, hidden among 15 locations."),
              h("li", {}, "Search a location (S): a positive is likely (80%) where something is hidden, but false alarms happen (15%)."),
              h("li", {}, "Attack (A) where the evidence piles up. Allies: Ron searches two places, Hermione searches sharper, Dumbledore reveals the truth of one place."),
              h("li", {}, "Voldemort sees everything: he may move a Horcrux (3 times) or plant a decoy (3 times) after Harry's move."),
            ),
          ),
        ),
        h(
          "div",
          {},
          h(
            "div",
            { class: "panel" },
            h("h2", {}, "Open games: join a free seat"),
            h("table", { "data-testid": "open-games" }, h("thead", {}, h("tr", {}, h("th", {}, "game"), h("th", {}, "rules"), h("th", {}, "players"), h("th", {}, "created"), h("th", {}, ""))), open),
          ),
          h(
            "div",
            { class: "panel" },
            h("h2", {}, "Being played: watch"),
            h("table", { "data-testid": "active-games" }, listHead(), active),
            (state.words.left || {}).lobby ? h("p", { class: "muted", "data-testid": "left-rule" }, fill(state.words.left.lobby, { minutes: state.words.left.minutes })) : null,
          ),
          h("div", { class: "panel" }, h("h2", {}, "Finished: replays"), h("table", { "data-testid": "over-games" }, listHead(), over)),
        ),
      ),
    ),
  );
  const held = Object.entries(heldSeats());
  if (!held.length) mine.append(h("tr", {}, h("td", { class: "muted" }, "None yet. Start one, or join an open game.")));
  for (const [gameId, rec] of held) {
    mine.append(
      h(
        "tr",
        { "data-testid": "my-game" },
        h("td", {}, h("code", {}, gameId)),
        h("td", {}, `${seatName(rec.seat)}${rec.name ? ` as ${rec.name}` : ""}${rec.over ? " · finished" : ""}`),
        h(
          "td",
          { class: "row" },
          rec.over
            ? h("button", { "data-testid": "my-replay", onclick: () => go(`#/replay/${encodeURIComponent(gameId)}`) }, "Replay")
            : h("button", { "data-testid": "resume", onclick: () => go(`#/game/${encodeURIComponent(gameId)}`) }, "Resume"),
          confirmButton("Leave", "Leave this game? This browser forgets its seat; nobody can play it from here again.", "Yes, leave", () => { leaveSeat(gameId); route(); }, "leave"),
        ),
      ),
    );
  }
  const refresh = async () => {
    if (state.current !== screen) return;
    try {
      const [o, a, v] = await Promise.all(
        ["open", "active", "over"].map((s) => api("GET", `/games?status=${s}&limit=20`)),
      );
      await learnSeats([...a.data.games, ...v.data.games.slice(-10)]);
      if (state.current !== screen) return;
      fillOpen(open, o.data.games, nameInput);
      fillList(active, a.data.games, "Watch", (id) => `#/game/${encodeURIComponent(id)}`, "No game is being played.");
      const ended = v.data.games.filter((g) => heldSeats()[g.game_id] && !heldSeats()[g.game_id].over);
      if (ended.length) {
        for (const g of ended) markOver(g.game_id);
        return route(); // "Your games" again, with a Replay for the finished ones
      }
      fillList(over, v.data.games.slice(-10).reverse(), "Replay", (id) => `#/replay/${encodeURIComponent(id)}`, "No finished game yet.");
      screen.idle = 0;
    } catch (err) {
      screen.idle += 1;
      message(`The lobby could not be read: ${err.message}`);
    }
    const wait = LOBBY_POLL_MS[Math.min(screen.idle, LOBBY_POLL_MS.length - 1)];
    if (state.current === screen) screen.timer = setTimeout(refresh, document.hidden ? 10000 : wait);
  };
  refresh();
}
