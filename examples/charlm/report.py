"""What a person watches: the progress bar (tqdm on a terminal, a line now and then
otherwise), the training history, the plan-building overhead, and the PNG plot."""

import collections
import statistics
import sys
import time


class History:
    def __init__(self):
        self.train = []  # (real tokens seen, training bits/char over recent steps)
        self.val = []  # (real tokens seen, validation bits/char)
        self.steps = self.tokens_seen = 0
        self.train_seconds = self.wall_seconds = 0.0


class Window:
    """Loss and speed over the last n steps, token-weighted."""

    def __init__(self, n):
        self.steps = collections.deque(maxlen=n)

    def add(self, loss_bits, loss_tokens, tokens, seconds):
        self.steps.append((loss_bits, loss_tokens, tokens, seconds))

    def bits(self):
        return sum(s[0] for s in self.steps) / max(1, sum(s[1] for s in self.steps))

    def tokens_per_s(self):
        return sum(s[2] for s in self.steps) / max(1e-9, sum(s[3] for s in self.steps))


class Progress:
    """tqdm's bar when stdout is a terminal; else a plain line every 10% of the run."""

    def __init__(self, total, by_steps, enabled):
        self.enabled, self.by_steps, self.total = enabled, by_steps, total
        self.bar = None
        self.next_line = 0.1
        self.start = time.perf_counter()
        if enabled and sys.stdout.isatty():
            try:
                from tqdm import tqdm
            except ImportError:  # the plain lines instead
                print("charlm: tqdm is not installed; progress as plain lines", flush=True)
                return
            fmt = ("{l_bar}{bar}| {n:.0f}/{total:.0f} " + ("steps" if by_steps else "s") +
                   " [{elapsed}<{remaining}{postfix}]")
            self.bar = tqdm(total=total, bar_format=fmt, dynamic_ncols=True, leave=True)

    def update(self, n, step, bpc, tokens_per_s, epoch):
        if not self.enabled:
            return
        if self.bar is not None:
            self.bar.n = n
            self.bar.set_postfix_str(f"step {step} epoch {epoch} {bpc:.3f} bits/char "
                                     f"{tokens_per_s:,.0f} tokens/s", refresh=False)
            self.bar.refresh()
        elif self.total and n / self.total >= self.next_line:
            self.next_line += 0.1
            print(f"  {100 * n / self.total:3.0f}%  step {step}  {bpc:.3f} bits/char  "
                  f"{tokens_per_s:,.0f} tokens/s  {time.perf_counter() - self.start:.0f} s",
                  flush=True)

    def note(self, text):
        if not self.enabled:
            return
        if self.bar is not None:
            self.bar.write("  " + text)
        else:
            print("  " + text, flush=True)

    def close(self):
        if self.bar is not None:
            self.bar.close()


def progress(total, by_steps, enabled):
    return Progress(total, by_steps, enabled)


def setup_overhead(stats, setup_seconds, steps, train_seconds):
    """One line on what rnnx's set-up cost: its networks (one per config and purpose), the
    batches bound to them (each new set of lengths costs its schedule), and the set-ups whose
    size class was new to a network, which may run the algorithm search."""
    if not setup_seconds:
        return "networks: none made"
    total = sum(setup_seconds)
    searched = [s for s in setup_seconds if s > 0.02]  # a search runs the problem several times
    text = (f"networks: {stats['networks']}, {stats['batches']:,} batches bound "
            f"({stats['backends_built']} backends built, the others rebound); set-up "
            f"{total:.2f} s in all, {1e3 * total / max(steps, 1):.3f} ms per step "
            f"({100 * total / max(train_seconds, 1e-9):.2f}% of the steps' time)")
    plain = [s for s in setup_seconds if s <= 0.02]
    if plain:
        text += f"; {1e6 * statistics.median(plain):.0f} us per new shape (median)"
    if searched:
        text += f"; {len(searched)} with an algorithm search, {sum(searched):.2f} s in all"
    return text


def plot(hist, unigram, rows, path, lstm="rnnx.torch.LSTM"):
    """Training and validation bits/char against real tokens seen; tokens/s per variant.
    Returns the file written, or None (with a one-line note) where matplotlib is missing."""
    try:
        import matplotlib
    except ImportError:
        print("charlm: matplotlib is not installed; no plot (pip install matplotlib, or "
              "Debian's python3-matplotlib)", flush=True)
        return None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    panels = 2 if rows else 1
    fig, axes = plt.subplots(1, panels, figsize=(6.5 * panels, 4.5), squeeze=False)
    ax = axes[0][0]
    if hist.train:
        ax.plot([t for t, _ in hist.train], [b for _, b in hist.train], lw=1, label="training")
    if hist.val:
        ax.plot([t for t, _ in hist.val], [b for _, b in hist.val], "o-", label="validation")
    ax.axhline(unigram, color="grey", ls="--", lw=1, label=f"unigram baseline {unigram:.2f}")
    ax.set_xlabel("real tokens seen")
    ax.set_ylabel("bits per character")
    ax.set_title(f"character LM on fortunes, {lstm}")
    ax.legend()
    ax.grid(alpha=0.3)
    if rows:
        ax = axes[0][1]
        names = [r["variant"] for r in rows]
        speeds = [r["tokens_per_s"] for r in rows]
        bars = ax.barh(names[::-1], speeds[::-1],
                       color=["C0" if n.startswith("rnnx") else "C1" for n in names[::-1]])
        for bar, r in zip(bars, rows[::-1]):
            ax.text(bar.get_width(), bar.get_y() + bar.get_height() / 2,
                    f" {r['ratio']:.2f}x", va="center")
        ax.set_xlabel("real tokens per second (training)")
        ax.set_title("same model, same data: speed by variant")
        ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
