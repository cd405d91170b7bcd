package sms.emulator;

import de.bwaldvogel.mongo.bson.Document;

/**
 * A collection whose stored documents are never modified once stored (an update stores a new
 * object): the stored object itself is a consistent snapshot, to be read without copying.
 */
interface PublishedDocuments {

    /** The stored document with this _id, not to be modified, or null. */
    Document published(Object id);
}
