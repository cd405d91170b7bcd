/**
 * A destination number's country, number type and validity by libphonenumber's `max` metadata
 * (docs/design.md "Routing, failover and prices"): the parsed country, so +44 7911 123456 is GG, not GB.
 *
 * libphonenumber-js builds a RegExp from its pattern strings on every test, which costs 40-80 µs a
 * number on this machine: 0.4-0.8 s for a batch of 10000, three times what storing it takes. Our
 * numbers are always international digits (domain/phone-numbers.ts), so this module compiles each
 * numbering plan's patterns once and follows the library's own steps for that case (calling code,
 * country by leading digits or number type, type, validity). The one case it does not follow, a
 * national prefix in an international number (e.g. +7 8..., every +54), goes to the library
 * itself. test/domain/destination.test.ts checks, over many numbers, that the answers are the
 * library's.
 */
import { Metadata, type MetadataJson, type PhoneNumberType } from "libphonenumber-js/core";
import parsePhoneNumber, { getCountries } from "libphonenumber-js/max";
import maxMetadata from "libphonenumber-js/max/metadata";

export type NumberType = PhoneNumberType;

export interface Destination {
  /** ISO 3166-1 alpha-2, undefined when no country has the number (e.g. +999..., +800...). */
  country: string | undefined;
  /** undefined when the number fits no type of its plan (then it is not valid). */
  numberType: NumberType | undefined;
  /** libphonenumber's isValid(): the number fits its country's plan. */
  valid: boolean;
}

/** The methods of libphonenumber's NumberingPlan read here (documented in part in its README). */
interface PlanView {
  nationalNumberPattern(): string;
  nationalPrefixForParsing(): string | undefined;
  leadingDigits(): string | undefined;
  hasTypes(): boolean;
  type(
    type: NumberType,
  ): { pattern(): string; possibleLengths(): number[] | undefined } | undefined;
}

interface TypeRule {
  pattern: RegExp;
  lengths: readonly number[] | undefined;
}

interface CompiledPlan {
  national: RegExp;
  /** The national prefix as the library strips it when parsing (anchored at the start). */
  nationalPrefix: RegExp | undefined;
  leadingDigits: RegExp | undefined;
  hasTypes: boolean;
  types: Map<NumberType, TypeRule>;
  /** A MOBILE entry with an empty pattern: the metadata dropped it as equal to FIXED_LINE. */
  mobileSameAsFixed: boolean;
}

// The library's order (helpers/getNumberType.js).
const NON_FIXED_LINE_TYPES: readonly NumberType[] = [
  "MOBILE",
  "PREMIUM_RATE",
  "TOLL_FREE",
  "SHARED_COST",
  "VOIP",
  "PERSONAL_NUMBER",
  "PAGER",
  "UAN",
  "VOICEMAIL",
];

/** Every type libphonenumber tells (routes may match on them). */
export const NUMBER_TYPES: readonly NumberType[] = [
  "FIXED_LINE",
  "FIXED_LINE_OR_MOBILE",
  ...NON_FIXED_LINE_TYPES,
];

const whole = (pattern: string) => new RegExp(`^(?:${pattern})$`);
const start = (pattern: string) => new RegExp(`^(?:${pattern})`);

function compile(plan: PlanView): CompiledPlan {
  const types = new Map<NumberType, TypeRule>();
  let mobileSameAsFixed = false;
  for (const name of ["FIXED_LINE", ...NON_FIXED_LINE_TYPES] as NumberType[]) {
    const type = plan.type(name);
    if (!type) continue;
    if (name === "MOBILE" && type.pattern() === "") mobileSameAsFixed = true;
    if (!type.pattern()) continue;
    types.set(name, { pattern: whole(type.pattern()), lengths: type.possibleLengths() });
  }
  const prefix = plan.nationalPrefixForParsing();
  const leading = plan.leadingDigits();
  return {
    national: whole(plan.nationalNumberPattern()),
    nationalPrefix: prefix ? start(prefix) : undefined,
    leadingDigits: leading ? start(leading) : undefined,
    hasTypes: plan.hasTypes(),
    types,
    mobileSameAsFixed,
  };
}

function isType(plan: CompiledPlan, national: string, type: NumberType): boolean {
  const rule = plan.types.get(type);
  if (!rule) return false;
  if (rule.lengths && !rule.lengths.includes(national.length)) return false;
  return rule.pattern.test(national);
}

function numberType(plan: CompiledPlan, national: string): NumberType | undefined {
  if (!plan.national.test(national)) return undefined;
  if (isType(plan, national, "FIXED_LINE")) {
    if (plan.mobileSameAsFixed || !plan.types.has("MOBILE")) return "FIXED_LINE_OR_MOBILE";
    return isType(plan, national, "MOBILE") ? "FIXED_LINE_OR_MOBILE" : "FIXED_LINE";
  }
  for (const type of NON_FIXED_LINE_TYPES) if (isType(plan, national, type)) return type;
  return undefined;
}

interface CallingCode {
  /** Its digits' count. */
  length: number;
  /** Its countries, the main one first; empty for a non-geographic code (+800, +870, ...). */
  countries: readonly string[];
  /** The plan the library selects for the code (its main country's, or the non-geographic one). */
  plan: CompiledPlan;
}

class NumberingPlans {
  private readonly countryPlans = new Map<string, CompiledPlan>();
  private readonly callingCodes = new Map<string, CallingCode>();

  constructor(json: MetadataJson) {
    const metadata = new Metadata(json) as Metadata & { numberingPlan: PlanView };
    for (const [code, countries] of Object.entries(json.country_calling_codes)) {
      const geographic = countries.filter((c) => c.length === 2);
      for (const country of geographic) {
        metadata.selectNumberingPlan(country as never);
        this.countryPlans.set(country, compile(metadata.numberingPlan));
      }
      const plan = geographic[0] && this.countryPlans.get(geographic[0]);
      if (plan) this.callingCodes.set(code, { length: code.length, countries: geographic, plan });
    }
    // Non-geographic calling codes (+800, +870, ...) have plans of their own.
    for (const code of Object.keys(json.nonGeographic ?? {})) {
      if (this.callingCodes.has(code)) continue;
      metadata.selectNumberingPlan(code as never);
      this.callingCodes.set(code, {
        length: code.length,
        countries: [],
        plan: compile(metadata.numberingPlan),
      });
    }
  }

  describe(digits: string): Destination {
    const code = this.callingCode(digits);
    return code ? this.describeNational(code, digits, digits.slice(code.length)) : NO_COUNTRY;
  }

  /** The country alone: no pattern is tested for a calling code of one country (most). */
  country(digits: string): string | undefined {
    const code = this.callingCode(digits);
    if (!code) return undefined;
    if (code.countries.length <= 1) return code.countries[0];
    return this.describeNational(code, digits, digits.slice(code.length)).country;
  }

  private callingCode(digits: string): CallingCode | undefined {
    // Calling codes are prefix-free: at most one of the first 1 to 3 digits is one.
    for (let length = 1; length <= 3 && length < digits.length; length++) {
      const code = this.callingCodes.get(digits.slice(0, length));
      if (code) return code;
    }
    return undefined;
  }

  private describeNational(code: CallingCode, digits: string, national: string): Destination {
    // The library strips a national prefix found here, under conditions of its own: its answer.
    if (code.plan.nationalPrefix?.test(national)) return libraryDescription(digits);
    const country = this.countryOf(code, national);
    const plan = country ? (this.countryPlans.get(country) ?? code.plan) : code.plan;
    const type = numberType(plan, national);
    return {
      country,
      numberType: type,
      valid: plan.hasTypes ? type !== undefined : plan.national.test(national),
    };
  }

  /** libphonenumber's getCountryByCallingCode. */
  private countryOf(code: CallingCode, national: string): string | undefined {
    if (code.countries.length <= 1) return code.countries[0];
    for (const country of code.countries) {
      const plan = this.countryPlans.get(country);
      if (!plan) continue;
      if (plan.leadingDigits) {
        if (plan.leadingDigits.test(national)) return country;
      } else if (numberType(plan, national)) return country;
    }
    return undefined;
  }
}

const NO_COUNTRY: Destination = Object.freeze({
  country: undefined,
  numberType: undefined,
  valid: false,
});

/** The library's own answer, for the cases this module does not follow (and for tests). */
export function libraryDescription(digits: string): Destination {
  const parsed = parsePhoneNumber(`+${digits}`);
  if (!parsed) return NO_COUNTRY;
  return { country: parsed.country, numberType: parsed.getType(), valid: parsed.isValid() };
}

let plans: NumberingPlans | undefined;

/**
 * The destination of a number in the API's format (optional `+`, then 8 to 15 digits, the
 * country calling code first). The metadata is compiled on first use (about 50 ms).
 */
export function describeDestination(to: string): Destination {
  plans ??= new NumberingPlans(maxMetadata);
  return plans.describe(to.startsWith("+") ? to.slice(1) : to);
}

/**
 * describeDestination(to).country, without the number's type and validity: for most calling
 * codes a lookup, no pattern tested (those take 1 to 10 µs a number, as much as storing it).
 */
export function destinationCountry(to: string): string | undefined {
  plans ??= new NumberingPlans(maxMetadata);
  return plans.country(to.startsWith("+") ? to.slice(1) : to);
}

/** Compiles the metadata now, so the first request does not wait for it. */
export function prepareDestinations(): void {
  plans ??= new NumberingPlans(maxMetadata);
}

let countries: ReadonlySet<string> | undefined;

/** Whether libphonenumber can give this country (ISO 3166-1 alpha-2, upper case) to a number. */
export function isKnownCountry(code: string): boolean {
  countries ??= new Set(getCountries());
  return countries.has(code);
}
