/**
 * A trie of digit prefixes: the values whose prefix starts a number, found in one walk over its
 * digits whatever the number of prefixes (routes and prices by prefix, docs/design.md "Routing, failover
 * and prices").
 */

interface TrieNode<T> {
  children: (TrieNode<T> | undefined)[];
  value?: T;
}

const node = <T>(): TrieNode<T> => ({ children: new Array(10) });

export class PrefixTrie<T> {
  private readonly root = node<T>();

  /** Sets the value of `prefix` (digits only); `merge` combines it with a value already there. */
  set(prefix: string, value: T, merge?: (old: T, value: T) => T): void {
    let at = this.root;
    for (let i = 0; i < prefix.length; i++) {
      const digit = prefix.charCodeAt(i) - 48;
      if (digit < 0 || digit > 9) throw new Error(`not a digit prefix: "${prefix}"`);
      let next = at.children[digit];
      if (!next) {
        next = node<T>();
        at.children[digit] = next;
      }
      at = next;
    }
    at.value = at.value !== undefined && merge ? merge(at.value, value) : value;
  }

  /** The values of every prefix of `digits`, shortest first. */
  allMatches(digits: string): T[] {
    const found: T[] = [];
    let at: TrieNode<T> | undefined = this.root;
    for (let i = 0; i < digits.length && at; i++) {
      at = at.children[digits.charCodeAt(i) - 48];
      if (at?.value !== undefined) found.push(at.value);
    }
    return found;
  }

  /** The value of the longest prefix of `digits`, if any. */
  longest(digits: string): T | undefined {
    let found: T | undefined;
    let at: TrieNode<T> | undefined = this.root;
    for (let i = 0; i < digits.length && at; i++) {
      at = at.children[digits.charCodeAt(i) - 48];
      if (at?.value !== undefined) found = at.value;
    }
    return found;
  }
}
