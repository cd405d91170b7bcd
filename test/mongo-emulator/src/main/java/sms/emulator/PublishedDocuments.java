package sms.emulator;

import de.bwaldvogel.mongo.bson.Document;

/**
 * A collection whose stored values are never modified (an update replaces them with new ones):
 * a value read from a stored document under the collection's lock stays as it was, without a copy.
 */
interface PublishedDocuments {

    /** The stored document with this _id, not to be modified, or null. Call under the collection's lock. */
    Document published(Object id);
}
